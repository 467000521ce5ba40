"""Causal LMs are registrable in the neural model registry (task "causal-lm")."""

from __future__ import annotations

import pytest

from neural.errors import ModelLoadError
from neural.generation import AsyncLLMEngine, EngineConfig, SamplingParams, register_causal_lm
from neural.registry import ModelRegistry


async def test_register_and_generate_through_the_registry(llama_dir, tmp_path):
    registry = ModelRegistry()
    entry = register_causal_lm(llama_dir, "tiny", EngineConfig(device="cpu", block_size=4), registry=registry)
    try:
        assert registry.get("tiny") is entry
        assert entry.task == "causal-lm" and entry.format == "hf" and len(entry.version) == 64
        assert isinstance(entry.backend, AsyncLLMEngine)
        assert entry.metadata["model_type"] == "llama" and entry.metadata["block_size"] == 4
        last = None
        async for out in entry.backend.generate(
            [5, 6, 7], SamplingParams(temperature=0, max_tokens=5, ignore_eos=True)
        ):
            last = out
        assert last.finished and len(last.token_ids) == 5
    finally:
        registry.unregister("tiny")  # closes the engine thread
    with pytest.raises(ModelLoadError, match="not a Hugging Face causal LM directory"):
        register_causal_lm(tmp_path, registry=registry)
