"""Model inference in tensor form (KServe v2) over the models' dynamic batchers.

A request's batch axis is split into rows that enter the model's batcher as separate requests,
admitted all or none; the rows' outputs are stacked back. Tensor models serve their own
signature; text models (a runner that takes strings) take `text` (string [-1]).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import BadInputError, DeadlineError, ExecutionError, NotFoundError, OverloadedError, UnavailableError

log = logging.getLogger("workbench.serving")


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


class ModelServing:
    """Mixin of `Serving`: the inference-protocol view of the served models.

    Uses the host's `_registry` (a `neural.registry.ModelRegistry` or None), `workbench`
    (its `catalog`), `_state`, `_lock`, `_loading` and `require_ready()`.
    """

    def _catalog(self) -> Any:
        return getattr(self.workbench, "catalog", None) if self._registry is None else None

    def _model_entries(self) -> list[Any]:
        if self._registry is not None:
            entries = list(self._registry.list())
        else:
            catalog = self._catalog()
            entries = list(catalog.loaded.values()) if catalog is not None else []
        return [e for e in entries if e.runner is not None and e.signature is not None]

    def model_names(self) -> list[str]:
        """Names of the models served by the inference protocol (those with a batcher), loaded or not;
        generation models (served by their engine, `generation_models()`) are not among them."""
        names = {e.name for e in self._model_entries()}
        catalog = self._catalog()
        if catalog is not None:
            names |= set(catalog.specs())
        return sorted(names - set(self._engines))

    def _known_names(self) -> list[str]:
        """Every name the inference protocol answers for (tensor and generation models), for 404 messages."""
        return sorted({*self.model_names(), *self._engines})

    def _unloaded(self, name: str) -> bool:
        catalog = self._catalog()
        return catalog is not None and name not in {e.name for e in self._model_entries()} and catalog.unloaded(name)

    def model_loading(self, name: str) -> bool:
        """True while a catalogue model is being loaded on first use."""
        with self._lock:
            return name in self._loading

    def _generation_version(self, name: str) -> str:
        catalog = getattr(self.workbench, "catalog", None)
        entry = catalog.loaded.get(name) if catalog is not None else None
        return entry.short_version if entry is not None else "1"

    def _generation_model(self, name: str) -> ServedModel:
        # Triton's generate extension: `text_input` in, `text_output` out (POST .../generate)
        return ServedModel(
            name=name,
            version=self._generation_version(name),
            platform="workbench_generation",
            task="causal-lm",
            inputs=(ServedTensor("text_input", "string", (1,)),),
            outputs=(ServedTensor("text_output", "string", (1,)),),
            max_batch_size=0,
            ready=self._state == "ready",
        )

    def model_index(self) -> list[dict[str, str]]:
        """Every served model version: `[{"name", "version", "state": "READY"|"UNAVAILABLE", "reason"}]`
        (Triton's model-repository index; catalogue models not loaded yet are UNAVAILABLE)."""
        self.require_ready()
        out = []
        loaded = {e.name for e in self._model_entries()}
        for e in self._model_entries():
            ready = self._entry_ready(e)
            out.append(
                {
                    "name": e.name,
                    "version": e.short_version,
                    "state": "READY" if ready else "UNAVAILABLE",
                    "reason": "" if ready else "batcher closed",
                }
            )
        for name in self.model_names():
            if name not in loaded:
                out.append(
                    {
                        "name": name,
                        "version": "",
                        "state": "UNAVAILABLE",
                        "reason": "loading"
                        if self.model_loading(name)
                        else "unloaded"
                        if self._unloaded(name)
                        else "not loaded yet (loads on first use)",
                    }
                )
        for name in self._engines:
            out.append({"name": name, "version": self._generation_version(name), "state": "READY", "reason": ""})
        return sorted(out, key=lambda m: (m["name"], m["version"]))

    def _entry(self, name: str, version: str | None) -> Any:
        self.require_ready()
        entries = [e for e in self._model_entries() if e.name == name]
        if not entries:
            catalog = self._catalog()
            if catalog is not None and catalog.unloaded(name):  # Triton (explicit model control): NOT_FOUND
                raise NotFoundError("model", name)._with(
                    f"model {name!r} has no available versions: it was unloaded; "
                    f"POST /v2/repository/models/{name}/load loads it again"
                )
            if catalog is not None and catalog.known(name):
                self._load_later(name)
                raise UnavailableError(f"model {name!r} is loading; retry shortly", 2.0)
            raise NotFoundError("model", name, self._known_names())
        if version is None:
            return entries[-1]
        matches = [e for e in entries if e.version.startswith(version)]
        if len(matches) == 1:
            return matches[0]
        raise NotFoundError(f"version of model {name!r}", version, [e.short_version for e in entries])

    def _load_later(self, name: str) -> None:
        with self._lock:
            if name in self._loading:
                return
            self._loading.add(name)

        def work() -> None:
            try:
                self._catalog().get(name)
            except Exception:
                log.exception("loading model %s failed", name)
            finally:
                with self._lock:
                    self._loading.discard(name)

        threading.Thread(target=work, name=f"load-{name}", daemon=True).start()

    def _entry_ready(self, entry: Any) -> bool:
        batcher = entry._batcher
        return self._state == "ready" and (batcher is None or not batcher.closed)

    def model(self, name: str, version: str | None = None) -> ServedModel:
        """The model's served metadata (a generation model: `text_input` -> `text_output`, served by
        `.../generate`). Raises NotFoundError, UnavailableError."""
        if name in self._engines:
            self.require_ready()
            served = self._generation_model(name)
            if version is not None and not served.version.startswith(version):
                raise NotFoundError(f"version of model {name!r}", version, [served.version])
            return served
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
        if name in self._engines:
            return [self._generation_version(name)]
        versions = [e.short_version for e in self._model_entries() if e.name == name]
        if not versions:
            raise NotFoundError("model", name, self._known_names())
        return versions

    def model_ready(self, name: str, version: str | None = None) -> bool:
        """True when the model can take requests now. Raises NotFoundError for unknown names."""
        if self._state == "loading":
            return False
        if name in self._engines:
            return self.model(name, version).ready
        if self._unloaded(name):
            return False
        try:
            return self._entry_ready(self._entry(name, version))
        except UnavailableError:
            return False

    async def infer(
        self, name: str, version: str | None, inputs: dict[str, np.ndarray], *, timeout_s: float | None = None
    ) -> InferenceOutput:
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
        if name in self._engines:
            raise BadInputError(
                f"model {name!r} is a generation model: POST /v2/models/{name}/generate or /v1/completions",
                param="model",
            )
        entry = self._entry(name, version)
        served = self.model(name, version)
        if timeout_s is None:
            timeout_s = self.settings.serving.predict_timeout_s
        results = await self._run_rows(entry, served, inputs, timeout_s)
        outputs = await asyncio.to_thread(_stack_outputs, entry, served, results)
        return InferenceOutput(served, outputs)

    async def _run_rows(
        self, entry: Any, served: ServedModel, inputs: dict[str, np.ndarray], timeout_s: float | None
    ) -> list[Any]:
        """Split, validate and tokenise the rows and admit them to the batcher, on a worker thread
        (never on the event loop: an 8 MiB text takes seconds to tokenise); then await them. If the
        awaiting task is cancelled (client gone, deadline), rows still queued are removed."""
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, self._admit_rows, entry, served, inputs, timeout_s)
        try:
            requests = await asyncio.shield(fut)
        except asyncio.CancelledError:
            fut.add_done_callback(_cancel_admitted)  # admitted after the caller left: take them back out
            raise
        try:
            results = await asyncio.gather(*(r.wait() for r in requests), return_exceptions=True)
        except asyncio.CancelledError:
            for r in requests:
                r.cancel()
            raise
        return _check_results(entry, results)

    def _admit_rows(
        self, entry: Any, served: ServedModel, inputs: dict[str, np.ndarray], timeout_s: float | None
    ) -> list[Any]:
        from neural.errors import BatcherClosedError, InputValidationError, NeuralError, QueueFullError

        rows = _split_rows(entry, served, inputs)
        try:
            return entry.submit_many(rows, timeout_s=timeout_s)
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


def _cancel_admitted(fut: Any) -> None:
    if not fut.cancelled() and fut.exception() is None:
        for r in fut.result():
            r.cancel()


def _check_results(entry: Any, results: list[Any]) -> list[Any]:
    from neural.errors import BatcherClosedError, BatchExecutionError, RequestTimeoutError

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
        raise BadInputError(
            f"model {entry.name!r}: missing input {missing[0]!r}; expected {_describe(spec)}", param=missing[0]
        )
    extra = [n for n in inputs if n not in names]
    if extra:
        raise BadInputError(
            f"model {entry.name!r}: unexpected input {extra[0]!r}; the model takes {names}", param=extra[0]
        )
    sizes = {}
    for n in names:
        arr = inputs[n]
        if arr.ndim < 1:
            spec = next(t for t in served.inputs if t.name == n)
            raise BadInputError(
                f"model {entry.name!r}, input {n!r}: a scalar; expected {_describe(spec)} (batch axis first)", param=n
            )
        sizes[n] = arr.shape[0]
    if len(set(sizes.values())) > 1:
        raise BadInputError(
            f"model {entry.name!r}: inputs disagree on the batch size (axis 0): {sizes}", param=names[0]
        )
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
        raise BadInputError(
            f"model {entry.name!r}, input 'text': shape {list(text.shape)}; expected string [-1]", param="text"
        )
    rows = []
    for i, x in enumerate(text.tolist()):
        if isinstance(x, bytes):
            try:
                x = x.decode()
            except UnicodeDecodeError:
                raise BadInputError(f"model {entry.name!r}, input 'text'[{i}]: not UTF-8 text", param="text") from None
        if not isinstance(x, str):
            raise BadInputError(
                f"model {entry.name!r}, input 'text'[{i}]: expected a string, got {type(x).__name__}", param="text"
            )
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
            arr = np.stack([np.asarray(v) for v in values]).astype(
                np.dtype(spec.dtype) if spec.dtype != "bfloat16" else np.float32
            )
        out[spec.name] = arr
    return out


def _describe(t: ServedTensor) -> str:
    return f"{t.dtype} [{', '.join(str(d) for d in t.shape)}]"


def _with_notes(exc: BaseException) -> str:
    notes = getattr(exc, "__notes__", None) or []
    return "; ".join([str(exc), *notes])
