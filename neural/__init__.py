"""Neural runtime: model registry, PyTorch and ONNX Runtime backends, dynamic batching, metrics.

Typical use::

    from neural import default_registry, register_minilm
    entry = register_minilm()                       # all-MiniLM-L6-v2, torch, CUDA if usable
    vec = await entry.infer("a sentence")           # float32 [384], through the dynamic batcher
    vecs = await entry.infer_many(["a", "b"])       # admitted all or none
    entry.batcher.stats.batches, entry.batcher.stats.batch_sizes

The generation engine for causal LMs lives in `neural.generation` and registers its models here.
"""

from .backends import Backend, OnnxBackend, TorchBackend
from .batching import BatcherConfig, BatcherStats, BatchRecord, DynamicBatcher, InferenceRequest
from .catalog import CatalogItem, add_to_catalog, catalog
from .device import cuda_usable, default_device, resolve_device, resolve_precision
from .entry import ModelEntry
from .errors import (
    BatcherClosedError,
    BatchExecutionError,
    ExportError,
    InputValidationError,
    ModelLoadError,
    ModelNotFoundError,
    NeuralError,
    QueueFullError,
    RequestTimeoutError,
)
from .export import ExportReport, export_entry, export_onnx
from .hashing import hash_files, hash_module
from .loaders import (
    infer_signature,
    load_hf_dir,
    load_module,
    load_onnx,
    load_torch_export,
    load_torchscript,
    save_torchscript,
)
from .metrics import METRICS_REGISTRY, ModelMetrics
from .minilm import MINILM_DIM, MINILM_NAME, MINILM_ONNX_NAME, minilm_dir, register_minilm
from .providers import usable_providers
from .registry import ModelRegistry, default_registry
from .runner import Runner, TensorRunner
from .signature import Signature, TensorSpec

__all__ = [
    "Backend",
    "BatchExecutionError",
    "CatalogItem",
    "add_to_catalog",
    "catalog",
    "export_entry",
    "BatchRecord",
    "BatcherClosedError",
    "BatcherConfig",
    "BatcherStats",
    "DynamicBatcher",
    "ExportError",
    "ExportReport",
    "InferenceRequest",
    "InputValidationError",
    "METRICS_REGISTRY",
    "MINILM_DIM",
    "MINILM_NAME",
    "MINILM_ONNX_NAME",
    "ModelEntry",
    "ModelLoadError",
    "ModelMetrics",
    "ModelNotFoundError",
    "ModelRegistry",
    "NeuralError",
    "OnnxBackend",
    "QueueFullError",
    "RequestTimeoutError",
    "Runner",
    "Signature",
    "TensorRunner",
    "TensorSpec",
    "TorchBackend",
    "cuda_usable",
    "default_device",
    "default_registry",
    "export_onnx",
    "hash_files",
    "hash_module",
    "infer_signature",
    "load_hf_dir",
    "load_module",
    "load_onnx",
    "load_torch_export",
    "load_torchscript",
    "minilm_dir",
    "register_minilm",
    "resolve_device",
    "resolve_precision",
    "save_torchscript",
    "usable_providers",
]
