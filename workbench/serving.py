"""The serving layer between the HTTP API and the runtime: what `api/` calls, in one place.

The `Workbench` facade (`workbench.workbench`) runs pipelines and knowledge bases; this module
adds what a server needs on top of it and what the facade does not offer:

- model inference in tensor form (KServe v2): the request's batch axis is split into rows that
  enter the model's dynamic batcher (`neural.batching`) as separate requests, admitted all or
  none, so concurrent HTTP requests share batches; the rows' outputs are stacked back;
- model metadata and readiness in the protocol's terms (served inputs and outputs);
- generation (OpenAI-style) through the generation engine, streaming, with cancellation by
  request id so a client that disconnects frees its KV-cache blocks;
- start-up loading in the background (readiness), Prometheus text of every registry.

`api/` imports only `workbench`; runtime errors (`neural`, `chaining`, `rules`, pipeline
errors) are translated here into the `ServingError` classes below, which the API maps to HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from workbench.config import Settings, get_settings

log = logging.getLogger("workbench.serving")


# ---- errors (the API maps each class to one HTTP status) ------------------------------------
class ServingError(Exception):
    """Base class. `message` is safe to show a client (never a stack trace)."""

    def __init__(self, message: str, *, param: str | None = None, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.details = details or []


class NotFoundError(ServingError):
    """No such pipeline, knowledge base, model, version or run (HTTP 404)."""

    def __init__(self, kind: str, name: str, known: Iterable[str] | None = None) -> None:
        msg = f"no {kind} named {name!r}"
        if known is not None:
            names = sorted(known)
            msg += "; known: " + (", ".join(names[:20]) + (" ..." if len(names) > 20 else "") if names else "(none)")
        super().__init__(msg, param=kind)
        self.kind = kind
        self.name = name


class BadInputError(ServingError):
    """The request is well-formed but wrong for its target (HTTP 400 for tensors, 422 for documents)."""


class InvalidDocumentError(ServingError):
    """An uploaded pipeline or knowledge base does not validate; `details` holds located errors (HTTP 422)."""


class ConflictError(ServingError):
    """The operation conflicts with the current state (HTTP 409)."""


class OverloadedError(ServingError):
    """A queue is full and nothing was admitted (HTTP 429 with Retry-After)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class UnavailableError(ServingError):
    """Not ready yet, or shutting down (HTTP 503 with Retry-After)."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DeadlineError(ServingError):
    """The request's time limit passed (HTTP 504)."""


class ExecutionError(ServingError):
    """The model, rules or pipeline failed while running this request (HTTP 500, message kept)."""


# ---- model view for the protocol --------------------------------------------------------------
@dataclass(slots=True, frozen=True)
class ServedTensor:
    """One input or output as served: `dtype` in numpy spelling ("string" for text), shape with
    the batch axis first (-1 for dynamic axes)."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class ServedModel:
    """A model as the inference protocol shows it."""

    name: str
    version: str
    platform: str
    task: str
    inputs: tuple[ServedTensor, ...]
    outputs: tuple[ServedTensor, ...]
    max_batch_size: int
    ready: bool


@dataclass(slots=True)
class InferenceOutput:
    """Outputs of one tensor inference: arrays with the request's batch axis first."""

    model: ServedModel
    outputs: dict[str, np.ndarray]
    batch_ids: list[int | None] = field(default_factory=list)


class Serving:
    """What the HTTP API serves.

    Args:
        workbench: the `Workbench` facade; None builds one from `settings` in `start()`.
        settings: defaults to `get_settings()`.
        registry: the model registry to serve (defaults to the workbench's).
        load: extra start-up work run in a thread before the server reports ready (tests load
            their models here); called with this `Serving`.
    """

    def __init__(
        self,
        workbench: Any | None = None,
        *,
        settings: Settings | None = None,
        registry: Any | None = None,
        engines: dict[str, Any] | None = None,
        load: Callable[["Serving"], None] | None = None,
    ) -> None:
        self.settings = settings or get_settings()
        self.workbench = workbench
        self._owns_workbench = workbench is None
        self._registry = registry
        self._engines: dict[str, Any] = dict(engines or {})
        self._load_fn = load
        self._state = "loading"
        self._error: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = threading.Lock()

    # ---- lifecycle and readiness ---------------------------------------------------------
    async def start(self) -> None:
        """Begin loading in the background; returns at once (the server answers /healthz meanwhile)."""
        self._task = asyncio.create_task(self._load_in_thread())

    async def _load_in_thread(self) -> None:
        try:
            await asyncio.to_thread(self._load)
        except Exception as exc:  # loading failed: /readyz says why, the process stays up
            log.exception("start-up loading failed")
            self._state, self._error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            self._state = "ready"

    def _load(self) -> None:
        if self.workbench is None:
            self.workbench = _build_workbench(self.settings)
        if self._load_fn is not None:
            self._load_fn(self)

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Wait until loading ends. Raises UnavailableError if it failed or took longer than `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self._state == "loading" and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self._state != "ready":
            raise UnavailableError(f"the server is not ready ({self._state}{': ' + self._error if self._error else ''})")

    async def stop(self) -> None:
        """Stop background loading and close what this object created."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        for engine in self._engines.values():
            close = getattr(engine, "close", None) or getattr(engine, "shutdown", None)
            if close is not None:
                try:
                    res = close()
                    if asyncio.iscoroutine(res):
                        await res
                except Exception:
                    log.exception("closing a generation engine failed")
        if self._owns_workbench and self.workbench is not None:
            close = getattr(self.workbench, "close", None)
            if close is not None:
                await asyncio.to_thread(close)

    @property
    def ready(self) -> bool:
        return self._state == "ready"

    def require_ready(self) -> None:
        """Raise UnavailableError (Retry-After 1 s) unless start-up loading has finished."""
        if self._state == "loading":
            raise UnavailableError("the server is still loading its models", 1.0)
        if self._state == "failed":
            raise UnavailableError(f"start-up loading failed: {self._error}", 30.0)

    def readiness(self) -> dict[str, Any]:
        """`{"ready": bool, "state": "loading"|"ready"|"failed", "models": {name: bool}, "error": str|None}`."""
        models: dict[str, bool] = {}
        if self._state == "ready":
            for entry in self._model_entries():
                models[entry.name] = self._entry_ready(entry)
            for name in self._engines:
                models[name] = True
        return {"ready": self._state == "ready", "state": self._state, "models": models, "error": self._error}

    def metrics_text(self) -> str:
        """Prometheus text of the runtime registries (models, generation, pipelines)."""
        from prometheus_client import generate_latest

        from neural.metrics import METRICS_REGISTRY

        parts = [generate_latest(METRICS_REGISTRY).decode()]
        for reg in _extra_registries():
            parts.append(generate_latest(reg).decode())
        return "".join(parts)

    # ---- models (KServe v2) --------------------------------------------------------------
    @property
    def registry(self) -> Any:
        if self._registry is not None:
            return self._registry
        wb = self.workbench
        for attr in ("registry", "models", "model_registry"):
            reg = getattr(wb, attr, None) if wb is not None else None
            if reg is not None and not callable(reg):
                return reg
        return None

    def _model_entries(self) -> list[Any]:
        reg = self.registry
        if reg is None:
            return []
        return [e for e in _registry_entries(reg) if e.runner is not None and e.signature is not None]

    def model_names(self) -> list[str]:
        """Names of the models served by the inference protocol (those with a batcher)."""
        return sorted({e.name for e in self._model_entries()})

    def _entry(self, name: str, version: str | None) -> Any:
        self.require_ready()
        entries = [e for e in self._model_entries() if e.name == name]
        if not entries:
            raise NotFoundError("model", name, self.model_names())
        if version is None:
            return entries[-1]
        matches = [e for e in entries if e.version.startswith(version)]
        if len(matches) == 1:
            return matches[0]
        raise NotFoundError(f"version of model {name!r}", version, [e.short_version for e in entries])

    def _entry_ready(self, entry: Any) -> bool:
        batcher = entry._batcher
        return self._state == "ready" and (batcher is None or not batcher.closed)

    def model(self, name: str, version: str | None = None) -> ServedModel:
        """The model's served metadata. Raises NotFoundError, UnavailableError."""
        entry = self._entry(name, version)
        inputs, outputs = _served_signature(entry)
        return ServedModel(
            name=entry.name,
            version=entry.short_version,
            platform=_platform(entry),
            task=entry.task,
            inputs=inputs,
            outputs=outputs,
            max_batch_size=entry.batcher_config.max_batch_size,
            ready=self._entry_ready(entry),
        )

    def model_versions(self, name: str) -> list[str]:
        """Short versions (12 hex digits of the weights' hash) registered under `name`."""
        self.require_ready()
        versions = [e.short_version for e in self._model_entries() if e.name == name]
        if not versions:
            raise NotFoundError("model", name, self.model_names())
        return versions

    def model_ready(self, name: str, version: str | None = None) -> bool:
        """True when the model can take requests now. Raises NotFoundError for unknown names."""
        if self._state == "loading":
            return False
        return self._entry_ready(self._entry(name, version))

    async def infer(self, name: str, version: str | None, inputs: dict[str, np.ndarray], *, timeout_s: float | None = None) -> InferenceOutput:
        """Run a tensor request through the model's dynamic batcher.

        Args:
            inputs: each served input name -> array with the batch axis first (all the same length
                B); text inputs (dtype "string") are arrays of `bytes`/`str`.
            timeout_s: deadline for the rows to be served (None: the batcher's default).
        Returns:
            `InferenceOutput` with every served output stacked to batch axis B.
        Raises:
            NotFoundError, BadInputError (names the input and expected shape), OverloadedError
            (queue full; nothing admitted), UnavailableError, DeadlineError, ExecutionError.
        """
        entry = self._entry(name, version)
        served = self.model(name, version)
        rows = _split_rows(entry, served, inputs)
        results = await self._run_rows(entry, rows, timeout_s)
        outputs = _stack_outputs(entry, served, results)
        return InferenceOutput(served, outputs)

    async def _run_rows(self, entry: Any, rows: list[Any], timeout_s: float | None) -> list[Any]:
        from neural.errors import (
            BatchExecutionError,
            BatcherClosedError,
            InputValidationError,
            NeuralError,
            QueueFullError,
            RequestTimeoutError,
        )

        try:
            requests = entry.submit_many(rows, timeout_s=timeout_s)
        except QueueFullError as exc:
            raise OverloadedError(str(exc), exc.retry_after_s) from None
        except BatcherClosedError as exc:
            raise UnavailableError(str(exc), 5.0) from None
        except InputValidationError as exc:
            raise BadInputError(_with_notes(exc), param=exc.input_name) from None
        except (ValueError, TypeError) as exc:  # e.g. more rows than the queue can ever hold
            raise BadInputError(f"model {entry.name!r}: {exc}") from None
        except NeuralError as exc:
            raise BadInputError(_with_notes(exc)) from None
        try:
            results = await asyncio.gather(*(r.wait() for r in requests), return_exceptions=True)
        except asyncio.CancelledError:
            for r in requests:
                r.cancel()
            raise
        for res in results:
            if isinstance(res, RequestTimeoutError):
                raise DeadlineError(str(res))
            if isinstance(res, BatchExecutionError):
                raise ExecutionError(str(res))
            if isinstance(res, BatcherClosedError):
                raise UnavailableError(str(res), 5.0)
            if isinstance(res, BaseException):
                raise ExecutionError(f"model {entry.name!r}: {type(res).__name__}: {res}")
        return list(results)


# ---- helpers: served signatures and row splitting ----------------------------------------------
_TEXT_INPUT = ServedTensor("text", "string", (-1,))


def _is_tensor_runner(entry: Any) -> bool:
    from neural.runner import TensorRunner

    return isinstance(entry.runner, TensorRunner)


def _served_signature(entry: Any) -> tuple[tuple[ServedTensor, ...], tuple[ServedTensor, ...]]:
    """Tensor models serve their own signature; text models take `text` (BYTES [-1]) and return
    their runner's outputs (embedding: the signature's output; classification: label/score/probabilities)."""
    sig = entry.signature
    outs = tuple(ServedTensor(s.name, s.dtype, tuple(s.shape)) for s in sig.outputs)
    if _is_tensor_runner(entry):
        return tuple(ServedTensor(s.name, s.dtype, tuple(s.shape)) for s in sig.inputs), outs
    if entry.task == "classification":
        n = sig.outputs[0].shape[-1]
        return (_TEXT_INPUT,), (
            ServedTensor("label", "string", (-1,)),
            ServedTensor("score", "float32", (-1,)),
            ServedTensor("probabilities", "float32", (-1, n)),
        )
    return (_TEXT_INPUT,), outs


def _platform(entry: Any) -> str:
    kind = getattr(entry.backend, "kind", "")
    return {"onnxruntime": "onnxruntime_onnx", "torch": "pytorch_torch"}.get(kind, kind or entry.format)


def _split_rows(entry: Any, served: ServedModel, inputs: dict[str, np.ndarray]) -> list[Any]:
    names = [t.name for t in served.inputs]
    missing = [n for n in names if n not in inputs]
    if missing:
        spec = next(t for t in served.inputs if t.name == missing[0])
        raise BadInputError(f"model {entry.name!r}: missing input {missing[0]!r}; expected {_describe(spec)}", param=missing[0])
    extra = [n for n in inputs if n not in names]
    if extra:
        raise BadInputError(f"model {entry.name!r}: unexpected input {extra[0]!r}; the model takes {names}", param=extra[0])
    sizes = {}
    for n in names:
        arr = inputs[n]
        if arr.ndim < 1:
            spec = next(t for t in served.inputs if t.name == n)
            raise BadInputError(f"model {entry.name!r}, input {n!r}: a scalar; expected {_describe(spec)} (batch axis first)", param=n)
        sizes[n] = arr.shape[0]
    if len(set(sizes.values())) > 1:
        raise BadInputError(f"model {entry.name!r}: inputs disagree on the batch size (axis 0): {sizes}", param=names[0])
    batch = next(iter(sizes.values()))
    if batch == 0:
        raise BadInputError(f"model {entry.name!r}: the batch axis (axis 0) is empty", param=names[0])
    if _is_tensor_runner(entry):
        from neural.errors import InputValidationError

        try:
            checked = entry.signature.validate(entry.name, inputs, batched=True)
        except InputValidationError as exc:
            raise BadInputError(str(exc), param=exc.input_name) from None
        return [{n: checked[n][i] for n in names} for i in range(batch)]
    text = inputs["text"]
    if text.ndim != 1:
        raise BadInputError(f"model {entry.name!r}, input 'text': shape {list(text.shape)}; expected string [-1]", param="text")
    rows = []
    for i, x in enumerate(text.tolist()):
        if isinstance(x, bytes):
            try:
                x = x.decode()
            except UnicodeDecodeError:
                raise BadInputError(f"model {entry.name!r}, input 'text'[{i}]: not UTF-8 text", param="text") from None
        if not isinstance(x, str):
            raise BadInputError(f"model {entry.name!r}, input 'text'[{i}]: expected a string, got {type(x).__name__}", param="text")
        rows.append(x)
    return rows


def _stack_outputs(entry: Any, served: ServedModel, results: list[Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for spec in served.outputs:
        if isinstance(results[0], dict):
            values = [r[spec.name] for r in results]
        else:  # embedding runners return the single output as a bare array
            values = list(results)
        if spec.dtype == "string":
            arr = np.empty(len(values), dtype=object)
            arr[:] = [v if isinstance(v, bytes) else str(v).encode() for v in values]
        else:
            arr = np.stack([np.asarray(v) for v in values]).astype(np.dtype(spec.dtype) if spec.dtype != "bfloat16" else np.float32)
        out[spec.name] = arr
    return out


def _describe(t: ServedTensor) -> str:
    return f"{t.dtype} [{', '.join(str(d) for d in t.shape)}]"


def _with_notes(exc: BaseException) -> str:
    notes = getattr(exc, "__notes__", None) or []
    return "; ".join([str(exc), *notes])


def _registry_entries(reg: Any) -> list[Any]:
    for attr in ("entries", "list", "all"):
        fn = getattr(reg, attr, None)
        if callable(fn):
            return list(fn())
    if isinstance(reg, dict):
        return list(reg.values())
    return list(reg)


def _extra_registries() -> list[Any]:
    """Registries other rooms keep apart from the neural one (generation, pipelines), if any."""
    regs = []
    for mod_name in ("neural.generation.metrics", "workbench.pipeline.metrics"):
        try:
            import importlib

            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        reg = getattr(mod, "METRICS_REGISTRY", None) or getattr(mod, "REGISTRY", None)
        if reg is not None and reg not in regs:
            from neural.metrics import METRICS_REGISTRY

            if reg is not METRICS_REGISTRY:
                regs.append(reg)
    return regs


def _build_workbench(settings: Settings) -> Any:
    """The `Workbench` facade built from settings (its module lands with the pipeline issue)."""
    try:
        from workbench.workbench import Workbench
    except ImportError:
        log.warning("workbench.workbench.Workbench is not available; serving models only")
        return None
    return Workbench(settings=settings) if "settings" in Workbench.__init__.__code__.co_varnames else Workbench()
