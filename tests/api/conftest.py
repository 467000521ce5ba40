"""Fixtures of the API tests: models in a registry, and a live server over them (see api_live.py)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

from api_live import DIGITS_ONNX, HeavyMLP, LiveServer, make_settings, serve
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
        HeavyMLP(), "heavy", example_inputs={"x": np.zeros((1, 16), np.float32)}, output_names=["y"],
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
