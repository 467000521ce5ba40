"""Device and precision: CUDA when usable, else CPU, chosen once per process and overridable per model.

"Usable" means a tensor op actually runs on the device, not that `torch.cuda.is_available()`
says so (a driver/runtime mismatch passes the latter and fails the former).
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

import torch

log = logging.getLogger("neural.device")

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "int8": None,
}
_CANONICAL = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@functools.cache
def cuda_usable() -> bool:
    """True when a small matmul runs on `cuda:0` (checked once per process)."""
    if not torch.cuda.is_available():
        return False
    try:
        x = torch.ones(8, 8, device="cuda")
        torch.cuda.synchronize()
        return bool((x @ x).sum().item() == 512.0)
    except Exception as exc:  # broken driver or runtime: fall back to CPU, say why once
        log.warning("CUDA reported available but unusable (%s); using CPU", exc)
        return False


@functools.cache
def default_device() -> str:
    """The process-wide default device: `"cuda"` when usable, else `"cpu"`.

    `WORKBENCH_DEVICE=auto|cpu|cuda` overrides it (the settings room sets that variable name).
    Raises ValueError for an unknown value or `cuda` without a usable GPU.
    """
    wanted = os.environ.get("WORKBENCH_DEVICE", "auto").strip().lower() or "auto"
    device = ("cuda" if cuda_usable() else "cpu") if wanted == "auto" else resolve_device(wanted)
    log.info("neural runtime default device: %s", device)
    return device


def resolve_device(device: str | None) -> str:
    """Map `None`/`"auto"` to the process default (`default_device()`); accept `"cpu"`, `"cuda"`, `"cuda:N"`.

    Raises ValueError naming the accepted values, or when CUDA is asked for but not usable.
    """
    if device is None or device == "auto":
        return default_device()
    device = device.strip().lower()
    if device == "cpu":
        return "cpu"
    if device == "cuda" or device.startswith("cuda:"):
        if not cuda_usable():
            raise ValueError(f"device {device!r} requested but CUDA is not usable on this machine; use 'cpu' or 'auto'")
        return device
    raise ValueError(f"unknown device {device!r}; accepted: auto, cpu, cuda, cuda:N")


@dataclass(slots=True, frozen=True)
class Precision:
    """Resolved precision of a model: the torch dtype of its weights and whether int8 dynamic quantisation applies."""

    name: str  # float32 | float16 | bfloat16 | int8
    torch_dtype: torch.dtype
    dynamic_int8: bool = False


def resolve_precision(dtype: str | None, device: str) -> Precision:
    """Check a requested precision against the device.

    fp32 everywhere; fp16/bf16 only on CUDA; int8 (dynamic quantisation of Linear layers) only on CPU.
    Raises ValueError with the accepted values otherwise.
    """
    name = (dtype or "float32").strip().lower()
    if name not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; accepted: float32/fp32, float16/fp16, bfloat16/bf16, int8")
    name = _CANONICAL.get(name, name)
    on_cuda = device.startswith("cuda")
    if name in ("float16", "bfloat16") and not on_cuda:
        raise ValueError(f"dtype {name} needs a CUDA device (model device is {device}); use float32 or int8 on CPU")
    if name == "int8":
        if on_cuda:
            raise ValueError("dtype int8 (dynamic quantisation) is CPU-only; use float16 or bfloat16 on CUDA")
        return Precision("int8", torch.float32, dynamic_int8=True)
    return Precision(name, _DTYPES[name])


def quantize_dynamic_int8(module: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 quantisation of the Linear layers (weights int8, activations quantised per batch), CPU only.

    Uses `torch.ao.quantization.quantize_dynamic` (deprecated upstream in favour of torchao, which is
    not a dependency here); its deprecation warnings are silenced.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)
