"""Read Hugging Face safetensors weights (single file or shards) into a name -> tensor dict."""

from __future__ import annotations

from pathlib import Path

import torch


def load_safetensors(model_dir: str | Path, dtype: torch.dtype, device: str) -> dict[str, torch.Tensor]:
    """All tensors of `model_dir/*.safetensors`, cast to `dtype` and moved to `device`.

    Raises FileNotFoundError naming the directory when it holds no .safetensors file.
    """
    from safetensors import safe_open

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(
            f"{model_dir}: no *.safetensors weights (pytorch_model.bin is not read; convert it to safetensors)"
        )
    out: dict[str, torch.Tensor] = {}
    for f in files:
        with safe_open(str(f), framework="pt", device="cpu") as fh:
            for name in fh.keys():
                t = fh.get_tensor(name)
                out[name] = (t.to(dtype) if t.is_floating_point() else t).to(device)
    return out


def take(weights: dict[str, torch.Tensor], name: str, where: str) -> torch.Tensor:
    """`weights[name]`, or KeyError naming the missing tensor and the model directory."""
    try:
        return weights[name]
    except KeyError:
        raise KeyError(f"{where}: weight {name!r} missing from the safetensors files") from None
