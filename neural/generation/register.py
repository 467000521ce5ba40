"""Register a causal LM in the neural model registry (task "causal-lm"), served by our engine."""

from __future__ import annotations

from pathlib import Path

from ..entry import ModelEntry
from ..errors import ModelLoadError
from ..hashing import hash_files
from ..registry import ModelRegistry, default_registry
from .async_engine import AsyncLLMEngine
from .chat import load_chat_template
from .config import EngineConfig
from .demo import DEMO_LM_DIR


def register_causal_lm(
    path: str | Path,
    name: str | None = None,
    config: EngineConfig | None = None,
    registry: ModelRegistry | None = None,
    max_pending_requests: int | None = 1024,
    replace: bool = False,
) -> ModelEntry:
    """`load_causal_lm` and register the entry in `registry` (default: the default registry)."""
    entry = load_causal_lm(path, name, config, max_pending_requests)
    return (registry or default_registry()).register(entry, replace=replace)


def load_causal_lm(
    path: str | Path,
    name: str | None = None,
    config: EngineConfig | None = None,
    max_pending_requests: int | None = 1024,
    registry: object | None = None,
) -> ModelEntry:
    """Load a Hugging Face causal LM directory into an `AsyncLLMEngine`; returns its entry.

    `registry`: the Prometheus registry of the engine's metrics (default: the neural one).

    The entry has task "causal-lm", format "hf", version = SHA-256 of the safetensors files,
    `signature=None` and `backend` = the `AsyncLLMEngine` (call `entry.backend.generate(...)`).
    `metadata` holds the architecture, max_model_len, KV-cache geometry and the chat template
    (when the tokenizer config has one). Raises ModelLoadError naming what is missing or unsupported.
    """
    root = Path(path)
    weights = sorted(root.glob("*.safetensors"))
    if not (root / "config.json").is_file() or not weights:
        raise ModelLoadError(f"{root}: not a Hugging Face causal LM directory (needs config.json and *.safetensors)")
    config = config or EngineConfig()
    name = name or root.name
    try:
        engine = AsyncLLMEngine.from_pretrained(
            root, config, model_name=name, registry=registry, max_pending_requests=max_pending_requests
        )
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise ModelLoadError(f"{root}: cannot load as a causal LM: {exc}") from exc
    llm = engine.engine
    entry = ModelEntry(
        name=name,
        version=hash_files(weights, root),
        format="hf",
        task="causal-lm",
        signature=None,
        device=llm.device,
        dtype=config.dtype,
        backend=engine,
        source=str(root),
        metadata={
            "model_type": llm.spec.model_type,
            "max_model_len": llm.max_model_len,
            "kv_blocks": llm.num_kv_blocks,
            "block_size": config.block_size,
            "kv_cache_bytes": llm.runner.kv_cache_bytes,
            "chat_template": load_chat_template(root),
            "eos_token_ids": sorted(llm.eos_token_ids),
        },
    )
    return entry


def register_demo_lm(registry: ModelRegistry | None = None, config: EngineConfig | None = None) -> ModelEntry:
    """Register the committed demo model (models/demo-lm) under the name "demo-lm"."""
    return register_causal_lm(DEMO_LM_DIR, "demo-lm", config, registry)
