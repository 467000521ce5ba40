"""`intra_op_threads` in the model catalogue reaches ONNX Runtime's session options (issue 14: the
default, one thread per core spinning between calls, doubled the demo's CPU per predict)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.pipeline.catalog import CatalogError, ModelCatalog, read_catalog

ROOT = Path(__file__).resolve().parents[3]
DIGITS = ROOT / "models" / "digits" / "model.onnx"


def _catalog(tmp_path: Path, extra: str) -> Path:
    file = tmp_path / "catalog.yaml"
    file.write_text(
        f"models:\n  - name: digits\n    format: onnx\n    path: {DIGITS}\n    task: classification\n{extra}"
    )
    return file


@pytest.mark.parametrize("threads", [1, 2])
def test_intra_op_threads_reaches_the_session(tmp_path, threads):
    catalog = ModelCatalog(_catalog(tmp_path, f"    intra_op_threads: {threads}\n"), builtin_minilm=False)
    try:
        entry = catalog.get("digits")
        assert entry.backend.session.get_session_options().intra_op_num_threads == threads
    finally:
        catalog.close()


def test_the_demo_digits_entry_runs_one_thread():
    assert read_catalog(ROOT / "models" / "catalog.yaml")["demo-digits"].intra_op_threads == 1


@pytest.mark.parametrize("value", ["-1", "two", "true"])
def test_a_bad_thread_count_is_refused_naming_the_model(tmp_path, value):
    with pytest.raises(CatalogError, match="'digits': intra_op_threads"):
        read_catalog(_catalog(tmp_path, f"    intra_op_threads: {value}\n"))


def test_threads_on_a_torch_model_are_refused(tmp_path):
    file = tmp_path / "catalog.yaml"
    file.write_text("models:\n  - name: m\n    format: torchscript\n    path: m.pt\n    intra_op_threads: 1\n")
    with pytest.raises(CatalogError, match="'m': intra_op_threads applies to ONNX Runtime"):
        read_catalog(file)
