"""Model backends: PyTorch and ONNX Runtime behind one `Backend.run(dict) -> dict` interface."""

from .base import Backend
from .onnx_backend import OnnxBackend
from .torch_backend import TorchBackend

__all__ = ["Backend", "OnnxBackend", "TorchBackend"]
