"""PyTorch backend: an `nn.Module`, TorchScript module or `torch.export` program in inference mode."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from ..device import Precision, quantize_dynamic_int8, resolve_device, resolve_precision
from ..signature import Signature
from .base import Backend

log = logging.getLogger("neural.torch")


class TorchBackend(Backend):
    """Runs `module(*inputs in signature order)` under `torch.inference_mode()` (`no_grad` for TorchScript).

    - `device`: "auto" | "cpu" | "cuda[:N]" (see `neural.device.resolve_device`).
    - `dtype`: float32 everywhere; float16/bfloat16 on CUDA (floating inputs are cast to it);
      int8 = dynamic quantisation of Linear layers on CPU. Outputs come back as float32 numpy.
    - `compile`: wrap the module with `torch.compile(dynamic=True)` (first calls are slow while it compiles).
    The module may return a tensor, a tuple/list (matched to output names by position) or a
    mapping / `ModelOutput` (matched by name).
    """

    kind = "torch"

    def __init__(
        self,
        module: Any,
        signature: Signature,
        *,
        device: str | None = None,
        dtype: str | None = None,
        compile: bool = False,
    ) -> None:
        self.signature = signature
        self.device = resolve_device(device)
        self.precision: Precision = resolve_precision(dtype, self.device)
        self.dtype = self.precision.name
        # the program as given (`.module()` below unlifts it to a GraphModule): ONNX export takes the program
        self.program: torch.export.ExportedProgram | None = None
        if isinstance(module, torch.export.ExportedProgram):
            self.program = module
            # an exported program is fixed: it may move device, but not change dtype or be quantised
            if self.precision.name != "float32":
                raise ValueError(f"dtype {self.precision.name} is not supported for torch.export programs; use float32")
            if self.device != "cpu":
                from torch.export.passes import move_to_device_pass

                module = move_to_device_pass(module, self.device)
            module = module.module()
        elif isinstance(module, torch.nn.Module) and not isinstance(module, torch.jit.ScriptModule):
            module.eval()
            if self.precision.dynamic_int8:
                module = quantize_dynamic_int8(module)
            else:
                module = module.to(device=self.device, dtype=self.precision.torch_dtype)
        elif isinstance(module, torch.jit.ScriptModule):
            module.eval()
            if self.precision.dynamic_int8:
                raise ValueError("int8 dynamic quantisation is not supported for TorchScript modules; use float32")
            module = module.to(self.device)
            if self.precision.torch_dtype != torch.float32:
                module = module.to(self.precision.torch_dtype)
        if isinstance(module, torch.nn.Module):
            for param in module.parameters():
                param.requires_grad_(False)
        self.module = module
        # TorchScript graphs may save tensors for autograd, which inference tensors forbid: use no_grad there
        self._grad_mode = torch.no_grad if isinstance(module, torch.jit.ScriptModule) else torch.inference_mode
        self.compiled = bool(compile)
        self._call = torch.compile(module, dynamic=True) if compile else module

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        args = [self._to_tensor(inputs[spec.name]) for spec in self.signature.inputs]
        with self._grad_mode():
            out = self._call(*args)
        return self._outputs(out)

    def _to_tensor(self, arr: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if t.is_floating_point():
            t = t.to(self.precision.torch_dtype)
        return t.to(self.device, non_blocking=True)

    def _outputs(self, out: Any) -> dict[str, np.ndarray]:
        names = self.signature.output_names
        if isinstance(out, torch.Tensor):
            values = [out]
        elif hasattr(out, "keys") and not isinstance(out, (tuple, list)):
            missing = [n for n in names if n not in out]
            if missing:
                raise RuntimeError(f"model output has no field(s) {missing}; it has {list(out.keys())}")
            values = [out[n] for n in names]
        else:
            values = list(out)
        if len(values) < len(names):
            raise RuntimeError(f"model returned {len(values)} outputs; the signature declares {names}")
        return {n: _to_numpy(v) for n, v in zip(names, values)}

    def close(self) -> None:
        self.module = None  # type: ignore[assignment]
        self._call = None
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "compiled": self.compiled, "threads": torch.get_num_threads()}


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.is_floating_point() and t.dtype != torch.float32:
        t = t.float()
    return t.cpu().numpy()
