"""A registered model: identity (name, version, format, task), signature, device/dtype, backend, batcher."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .batching import BatcherConfig, DynamicBatcher, InferenceRequest
from .batching.batcher import await_all
from .errors import NeuralError
from .metrics import ModelMetrics
from .signature import Signature

FORMATS = ("hf", "onnx", "torchscript", "torch_export", "nn_module")
TASKS = ("embedding", "classification", "causal-lm", "regression", "custom")


@dataclass(slots=True, eq=False)
class ModelEntry:
    """One model version in the registry.

    - `version`: SHA-256 hex of the weights' content (see `neural.hashing`).
    - `format`: one of hf | onnx | torchscript | torch_export | nn_module.
    - `task`: embedding | classification | causal-lm | regression | custom.
    - `signature`: the tensor signature (None for models served another way, e.g. causal LMs).
    - `backend`: a `neural.backends.Backend`, or any object another subsystem serves the model with
      (the generation engine registers its engine here).
    - `runner`: turns single requests into batches (see `neural.runner`); None: no batcher.
    Requests go through `batcher` (created on first use with `batcher_config`).
    """

    name: str
    version: str
    format: str
    task: str
    signature: Signature | None
    device: str
    dtype: str
    backend: Any
    runner: Any = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    batcher_config: BatcherConfig = field(default_factory=BatcherConfig)
    _batcher: DynamicBatcher | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"model name must be non-empty without spaces, got {self.name!r}")
        if not self.version:
            raise ValueError(f"model {self.name!r}: version (content hash) must be non-empty")
        if self.format not in FORMATS:
            raise ValueError(f"model {self.name!r}: unknown format {self.format!r}; accepted: {', '.join(FORMATS)}")
        if self.task not in TASKS:
            raise ValueError(f"model {self.name!r}: unknown task {self.task!r}; accepted: {', '.join(TASKS)}")
        if self.runner is not None:  # the model's metric series exist from load, before its first request
            ModelMetrics(self.name, self.short_version)

    @property
    def short_version(self) -> str:
        return self.version[:12]

    # ---- batched inference ------------------------------------------------------------------
    @property
    def batcher(self) -> DynamicBatcher:
        """The model's dynamic batcher (started on first access). Raises NeuralError if it has no runner."""
        if self._batcher is None:
            if self.runner is None:
                raise NeuralError(f"model {self.name!r} ({self.task}) is not served by a dynamic batcher")
            with self._lock:
                if self._batcher is None:
                    length = self.runner.item_length if getattr(self.runner, "sequence_axis", False) else None
                    config = self.batcher_config
                    if length is not None and not getattr(self.runner, "padding_safe", False):
                        config = dataclasses.replace(config, exact_lengths=True)
                    self._batcher = DynamicBatcher(
                        self.name,
                        self.runner.run_batch,
                        config,
                        length_fn=length,
                        metrics=ModelMetrics(self.name, self.short_version),
                    )
        return self._batcher

    def submit(self, item: Any, *, timeout_s: float | None = None, hold: bool = False) -> InferenceRequest:
        """Validate/prepare one request in this thread, then queue it (`hold`: see `DynamicBatcher.submit`).
        Raises InputValidationError, QueueFullError."""
        return self._submit_prepared([self._prepare(item)], timeout_s, hold)[0]

    def submit_many(self, items: Iterable[Any], *, timeout_s: float | None = None) -> list[InferenceRequest]:
        """Validate all, then admit all or none. Raises InputValidationError (naming the item), QueueFullError."""
        prepared = []
        for i, item in enumerate(items):
            try:
                prepared.append(self._prepare(item))
            except NeuralError as exc:
                exc.add_note(f"in item {i} of the request list")
                raise
        return self._submit_prepared(prepared, timeout_s)

    async def infer(self, item: Any, *, timeout_s: float | None = None) -> Any:
        """Await the output of one request (embedding: float32 [dim]; tensor model: {output: array})."""
        return await self.submit(item, timeout_s=timeout_s).wait()

    async def infer_many(self, items: Iterable[Any], *, timeout_s: float | None = None) -> list[Any]:
        """Await the outputs of several requests, in order (admitted all or none)."""
        return await await_all(self.submit_many(items, timeout_s=timeout_s))

    def infer_sync(self, item: Any, *, timeout_s: float | None = None) -> Any:
        """Blocking `infer` for threads without an event loop."""
        return self.submit(item, timeout_s=timeout_s).result()

    def predict(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run one already-batched request directly on the backend, bypassing the batcher.

        `inputs` maps each input name to an array with the batch axis first; validated against the
        signature (InputValidationError names the input and expected shape).
        """
        if self.signature is None or not hasattr(self.backend, "run"):
            raise NeuralError(f"model {self.name!r} ({self.task}) has no tensor interface")
        return self.backend.run(self.signature.validate(self.name, inputs, batched=True))

    def _prepare(self, item: Any) -> Any:
        if self.runner is None:
            raise NeuralError(f"model {self.name!r} ({self.task}) is not served by a dynamic batcher")
        try:
            return self.runner.prepare(item)
        except NeuralError:
            self.batcher.metrics.failure("invalid_input")
            raise

    def _submit_prepared(
        self, prepared: list[Any], timeout_s: float | None, hold: bool = False
    ) -> list[InferenceRequest]:
        return self.batcher.submit_many(prepared, timeout_s=timeout_s, hold=hold)

    # ---- description and lifecycle -----------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """A JSON-ready description (CLI `model info`, API model metadata)."""
        backend = (
            self.backend.describe() if hasattr(self.backend, "describe") else {"backend": type(self.backend).__name__}
        )
        cfg = self.batcher_config
        return {
            "name": self.name,
            "version": self.version,
            "format": self.format,
            "task": self.task,
            "device": self.device,
            "dtype": self.dtype,
            "source": self.source,
            "signature": self.signature.to_dict() if self.signature else None,
            "backend": backend,
            "batcher": None
            if self.runner is None
            else {
                "max_batch_size": cfg.max_batch_size,
                "max_queue_delay_ms": cfg.max_queue_delay_ms,
                "max_queue_size": cfg.max_queue_size,
                "buckets": list(cfg.buckets) if cfg.buckets else None,
            },
            "metadata": self.metadata,
        }

    def close(self) -> None:
        """Drain and stop the batcher, then release the backend."""
        if self._batcher is not None:
            self._batcher.close()
        if hasattr(self.backend, "close"):
            self.backend.close()
