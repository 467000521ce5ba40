"""ONNX Runtime backend: an InferenceSession on the providers that actually work here."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ..device import resolve_device
from ..providers import providers_for
from ..signature import Signature, TensorSpec, onnx_type_to_dtype
from .base import Backend

log = logging.getLogger("neural.onnxruntime")


class OnnxBackend(Backend):
    """Runs an ONNX file with onnxruntime.

    `device` "cuda" uses the TensorRT/CUDA providers that created a session in the probe
    (`neural.providers.usable_providers`), with CPU as fallback; "cpu" uses the CPU provider.
    `intra_op_threads` (0: onnxruntime's default) bounds the CPU threads of one run.
    Raises `onnxruntime` errors for an unreadable or invalid file.
    """

    kind = "onnxruntime"

    def __init__(self, path: str | Path, *, device: str | None = None, intra_op_threads: int = 0) -> None:
        import onnxruntime as ort

        self.path = Path(path)
        self.device = resolve_device(device)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if intra_op_threads:
            opts.intra_op_num_threads = int(intra_op_threads)
        self.session = ort.InferenceSession(str(self.path), sess_options=opts, providers=providers_for(self.device))
        self.providers = self.session.get_providers()
        self.signature = Signature(
            tuple(_spec(i) for i in self.session.get_inputs()), tuple(_spec(o) for o in self.session.get_outputs())
        )
        floats = [s.dtype for s in self.signature.inputs if s.dtype.startswith(("float", "bfloat"))]
        self.dtype = floats[0] if floats else "float32"
        log.info("onnxruntime session for %s on %s", self.path.name, self.providers)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {spec.name: inputs[spec.name] for spec in self.signature.inputs}
        outs = self.session.run(self.signature.output_names, feeds)
        return dict(zip(self.signature.output_names, outs))

    def close(self) -> None:
        self.session = None  # type: ignore[assignment]

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "providers": list(self.providers), "file": str(self.path)}


def _spec(node) -> TensorSpec:
    shape = tuple(d if isinstance(d, int) and d >= 0 else -1 for d in (node.shape or []))
    dims = tuple(d if isinstance(d, str) else None for d in (node.shape or []))
    return TensorSpec(node.name, onnx_type_to_dtype(node.type), shape, dims)
