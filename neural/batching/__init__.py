"""Dynamic batching for one-shot models (Triton-style): config, batcher, request handles, stats."""

from .batcher import DynamicBatcher, RunBatch
from .config import BatcherConfig
from .request import InferenceRequest
from .stats import BatcherStats, BatchRecord

__all__ = ["BatchRecord", "BatcherConfig", "BatcherStats", "DynamicBatcher", "InferenceRequest", "RunBatch"]
