"""Our forward passes for causal LMs over the paged KV cache (Llama family, GPT-2)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..model_config import ModelSpec
from .gpt2 import GPT2Model
from .llama import LlamaModel


def build_model(spec: ModelSpec, model_dir: str | Path, dtype: torch.dtype, device: str) -> LlamaModel | GPT2Model:
    """Load the weights of `model_dir` into the forward pass for `spec.arch`."""
    from ..weights import load_safetensors

    weights = load_safetensors(model_dir, dtype, device)
    cls = LlamaModel if spec.arch == "llama" else GPT2Model
    return cls(spec, weights, where=str(model_dir), dtype=dtype, device=device)


__all__ = ["build_model", "LlamaModel", "GPT2Model"]
