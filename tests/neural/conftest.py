"""Shared fixtures of the neural tests: small thread counts, one MiniLM per session (torch and ONNX Runtime)."""

from __future__ import annotations

import os

import pytest
import torch

torch.set_num_threads(2)


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory):
    """A fresh ONNX cache per session, so the export and its numerics check really run. Not made
    yet: the loader makes its own cache folder (export_onnx itself never creates folders)."""
    return tmp_path_factory.mktemp("onnx-cache") / "onnx"


@pytest.fixture(scope="session")
def minilm_registry(onnx_cache):
    from neural import BatcherConfig, ModelRegistry, register_minilm

    reg = ModelRegistry()
    cfg = BatcherConfig(max_batch_size=16, max_queue_delay_ms=5)
    register_minilm(reg, batcher_config=cfg)
    register_minilm(reg, backend="onnxruntime", onnx_cache_dir=onnx_cache, intra_op_threads=2, batcher_config=cfg)
    yield reg
    reg.close()


@pytest.fixture(scope="session")
def sentence_transformer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    from neural import minilm_dir

    return SentenceTransformer(str(minilm_dir()), device="cpu")
