"""Fixtures of the API tests: models in a registry, and a live server over them (see api_live.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from api_live import API_KEY, DIGITS_ONNX, FIXTURES, HeavyMLP, LiveServer, make_settings, serve

from workbench.serving import Serving


@pytest.fixture(scope="session")
def digits_data() -> tuple[np.ndarray, np.ndarray]:
    """The scikit-learn handwritten digits (real data shipped in the package): float32 [N, 64], labels [N]."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target.astype(np.int64)


@pytest.fixture(scope="session")
def model_registry():
    """A registry with the digits ONNX model, MiniLM (text embedding) and the heavy MLP."""
    from neural.batching import BatcherConfig
    from neural.minilm import register_minilm
    from neural.registry import ModelRegistry

    reg = ModelRegistry()
    reg.register_onnx(DIGITS_ONNX, name="digits", task="classification", intra_op_threads=1)
    register_minilm(reg, name="minilm", batcher_config=BatcherConfig(max_batch_size=16, max_queue_delay_ms=2))
    reg.register_module(
        HeavyMLP(),
        "heavy",
        example_inputs={"x": np.zeros((1, 16), np.float32)},
        output_names=["y"],
        batcher_config=BatcherConfig(max_batch_size=2, max_queue_size=3, max_queue_delay_ms=1, buckets=None),
    )
    yield reg
    reg.close()


@pytest.fixture(scope="module")
def model_server(tmp_path_factory, model_registry) -> Iterator[LiveServer]:
    """A server over `model_registry` with no API keys."""
    settings = make_settings(tmp_path_factory.mktemp("models"))
    server = serve(Serving(settings=settings, registry=model_registry), settings)
    yield server
    server.stop()


# ---- generation ------------------------------------------------------------------------------------
RAILS_KB = """
(deftemplate prompt (slot text))
(deftemplate completion (slot text) (slot delta) (slot tokens) (slot finished))
(deftemplate rail (slot action) (slot text (default "")) (slot reason (default "")))

(defrule block-password-requests
  (prompt (text ?t&:(str-index "password" (lowcase ?t))))
  =>
  (assert (rail (action block) (text "I cannot help with passwords.") (reason "secret request"))))

(defrule rewrite-shouting-prompts
  (prompt (text ?t&:(eq ?t (upcase ?t))&:(> (str-length ?t) 3)))
  =>
  (assert (rail (action rewrite) (text (lowcase ?t)) (reason "no shouting"))))

(defrule stop-after-five-tokens
  (completion (tokens ?n&:(>= ?n 5)) (finished FALSE))
  =>
  (assert (rail (action stop) (text " [cut]") (reason "length policy"))))
"""

UPPER_KB = """
(deftemplate prompt (slot text))
(deftemplate completion (slot text) (slot delta) (slot tokens) (slot finished))
(deftemplate rail (slot action) (slot text (default "")) (slot reason (default "")))

(defrule redact-to-upper-case
  (completion (delta ?d&:(neq ?d "")))
  =>
  (assert (rail (action rewrite) (text (upcase ?d)) (reason "house style"))))
"""


REDACT_KB = """
(deftemplate prompt (slot text))
(deftemplate completion (slot text) (slot delta) (slot tokens) (slot finished))
(deftemplate rail (slot action) (slot text (default "")) (slot reason (default "")))

(defrule redact-not
  (completion (delta ?d&:(str-index "not" ?d)))
  =>
  (assert (rail (action rewrite) (text (str-replace ?d "not" "[x]")) (reason "redaction"))))
"""


@pytest.fixture(scope="session")
def demo_lm_dir():
    from neural.generation import DEMO_LM_DIR

    if not (DEMO_LM_DIR / "config.json").is_file():
        pytest.skip(f"the demo LM is not in {DEMO_LM_DIR} yet (scripts/train_demo_lm.py)")
    return DEMO_LM_DIR


@pytest.fixture(scope="module")
def gen_server(tmp_path_factory, demo_lm_dir) -> Iterator[LiveServer]:
    """A server with the demo LM as `demo-lm` (small KV cache) and a workbench holding rails KBs."""
    from neural.generation import EngineConfig
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("gen")
    kb_dir = tmp / "kb"
    kb_dir.mkdir()
    (kb_dir / "rails.clp").write_text(RAILS_KB)
    (kb_dir / "upper.clp").write_text(UPPER_KB)
    (kb_dir / "redact.clp").write_text(REDACT_KB)
    (kb_dir / "not_rails.clp").write_text("(deftemplate person (slot name))\n(deftemplate prompt (slot words))\n")
    settings = make_settings(tmp)
    wb = Workbench(settings, knowledge_base_dir=kb_dir, pipeline_dir=tmp / "pipelines", model_catalog=tmp / "none.yaml")
    config = EngineConfig(max_num_seqs=8, num_kv_blocks=160, block_size=16, max_model_len=1024, num_threads=1)
    serving = Serving(
        wb,
        settings=settings,
        load_models=False,
        serve_demo_lm=False,
        max_pending_generations=6,
        load=lambda s: s.add_engine("demo-lm", demo_lm_dir, config),
    )
    server = serve(serving, settings)
    server.serving = serving
    yield server
    server.stop()
    wb.close()


# ---- pipelines and knowledge bases -----------------------------------------------------------------


@pytest.fixture(scope="module")
def pipeline_workbench(tmp_path_factory):
    """A Workbench over a temporary knowledge-base folder (copies of fixtures/*.clp) with the digits model."""
    import shutil

    from neural.loaders import load_onnx
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("pipelines")
    kb_dir = tmp / "kb"
    kb_dir.mkdir()
    for f in FIXTURES.glob("*.clp"):
        shutil.copy(f, kb_dir / f.name)
    settings = make_settings(tmp, api_keys=[API_KEY, "another-key"])
    wb = Workbench(settings, knowledge_base_dir=kb_dir, pipeline_dir=tmp / "pipelines", model_catalog=tmp / "none.yaml")
    wb.register_model_entry(load_onnx(DIGITS_ONNX, name="digits", task="classification", intra_op_threads=1))
    wb.test_settings = settings
    yield wb
    wb.close()


@pytest.fixture(scope="module")
def pipeline_server(pipeline_workbench) -> Iterator[LiveServer]:
    """A server with API keys set (mutations need a key, predictions do not)."""
    settings = pipeline_workbench.test_settings
    server = serve(Serving(pipeline_workbench, settings=settings, load_models=False, serve_demo_lm=False), settings)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def digits_server(tmp_path_factory) -> Iterator[LiveServer]:
    """A real uvicorn on 127.0.0.1 serving the demo pipelines with the digits model (one per module)."""
    settings = make_settings(tmp_path_factory.mktemp("digits"))
    s = serve(Serving(settings=settings, load_models=["demo-digits"], serve_demo_lm=False), settings)
    yield s
    s.stop()
