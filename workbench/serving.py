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
import inspect
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

    def _with(self, message: str) -> "NotFoundError":
        """Replace the message with the runtime's own (it already names what exists)."""
        self.message = message
        self.args = (message,)
        return self


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
        registry: a `neural.registry.ModelRegistry` to serve instead of the workbench's model
            catalogue (tests serve their own models this way).
        engines: generation engines by served model name (`neural.generation.AsyncLLMEngine`);
            None serves the demo LM (`models/demo-lm`) as `demo-lm` when it is there.
        load: extra start-up work run in a thread before the server reports ready; called with
            this `Serving`.
        load_models: load the catalogue's models at start-up (True: all; a list: those names;
            False: each on first use), so that `/readyz` turns 200 only once they are loaded.
        max_pending_generations: most unfinished generation requests per engine; more get 429.
    """

    def __init__(
        self,
        workbench: Any | None = None,
        *,
        settings: Settings | None = None,
        registry: Any | None = None,
        engines: dict[str, Any] | None = None,
        load: Callable[["Serving"], None] | None = None,
        load_models: bool | list[str] = True,
        serve_demo_lm: bool = True,
        max_pending_generations: int = 256,
    ) -> None:
        self.settings = settings or get_settings()
        self._load_models = load_models
        self._serve_demo_lm = serve_demo_lm and engines is None
        self._max_pending_generations = max_pending_generations
        self._owned_engines: set[str] = set()
        self._loading: set[str] = set()
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
        wb = self.workbench
        if self._registry is None and wb is not None and self._load_models:
            wb.load_models(None if self._load_models is True else list(self._load_models))
        if self._serve_demo_lm:
            self._start_demo_lm()
        if self._load_fn is not None:
            self._load_fn(self)

    def _start_demo_lm(self) -> None:
        from neural.generation import DEMO_LM_DIR

        if not (DEMO_LM_DIR / "config.json").is_file():
            log.info("no demo LM at %s; /v1/completions serves no model", DEMO_LM_DIR)
            return
        self.add_engine("demo-lm", DEMO_LM_DIR)

    def add_engine(self, name: str, model_dir: Any, config: Any = None) -> Any:
        """Start a generation engine for the causal LM in `model_dir` and serve it as `name`.

        `config`: a `neural.generation.EngineConfig` (default: its defaults). Returns the engine.
        Its metrics go to the runtime registry served at /metrics.
        """
        from neural.generation import AsyncLLMEngine
        from neural.metrics import METRICS_REGISTRY

        engine = AsyncLLMEngine.from_pretrained(model_dir, config, model_name=name, registry=METRICS_REGISTRY,
                                                max_pending_requests=self._max_pending_generations)
        engine.chat_template_dir = model_dir
        self._engines[name] = engine
        self._owned_engines.add(name)
        return engine

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
        for name, engine in self._engines.items():
            if name not in self._owned_engines:
                continue
            close = getattr(engine, "shutdown", None) or getattr(engine, "close", None)
            if close is not None:
                try:
                    await asyncio.to_thread(close)
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

        from prometheus_client import REGISTRY

        parts = [generate_latest(METRICS_REGISTRY).decode(), generate_latest(REGISTRY).decode()]
        wb_reg = getattr(self.workbench, "metrics_registry", None)
        for reg in [wb_reg, *_extra_registries()]:
            if reg is None or reg is METRICS_REGISTRY or reg is REGISTRY:
                continue
            parts.append(generate_latest(reg).decode())
        return "".join(parts)

    # ---- models (KServe v2) --------------------------------------------------------------
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
        """Names of the models served by the inference protocol (those with a batcher), loaded or not."""
        names = {e.name for e in self._model_entries()}
        catalog = self._catalog()
        if catalog is not None:
            names |= set(catalog.specs())
        return sorted(names)

    def _entry(self, name: str, version: str | None) -> Any:
        self.require_ready()
        entries = [e for e in self._model_entries() if e.name == name]
        if not entries:
            catalog = self._catalog()
            if catalog is not None and catalog.known(name):
                self._load_later(name)
                raise UnavailableError(f"model {name!r} is loading; retry shortly", 2.0)
            raise NotFoundError("model", name, self.model_names())
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
        try:
            return self._entry_ready(self._entry(name, version))
        except UnavailableError:
            return False

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


    # ---- generation (OpenAI-compatible) ---------------------------------------------------
    def generation_models(self) -> list[dict[str, Any]]:
        """`[{"name", "max_model_len", "num_kv_blocks"}]` of the served causal LMs."""
        out = []
        for name, engine in sorted(self._engines.items()):
            eng = engine.engine
            out.append({"name": name, "max_model_len": eng.max_model_len, "num_kv_blocks": eng.num_kv_blocks,
                        "block_size": eng.config.block_size, "device": str(eng.device)})
        return out

    def _engine(self, model: str) -> Any:
        self.require_ready()
        engine = self._engines.get(model)
        if engine is None:
            raise NotFoundError("model", model, list(self._engines))
        return engine

    def kv_blocks(self, model: str) -> dict[str, int]:
        """`{"used", "free", "total"}` KV-cache blocks of a served LM (used = referenced by requests)."""
        engine = self._engine(model)
        return {"used": engine.num_used_blocks, "free": engine.num_free_blocks, "total": engine.engine.num_kv_blocks}

    def unfinished_generations(self, model: str) -> int:
        """Requests admitted and not finished (waiting + running) on a served LM."""
        return self._engine(model).num_unfinished_requests

    def chat_prompt(self, model: str, messages: list[dict[str, Any]]) -> str:
        """Render chat `messages` (`[{"role", "content"}]`) with the tokenizer's chat template.

        The template is `chat_template` of the model's `tokenizer_config.json` (or a
        `chat_template.jinja` file), rendered as transformers renders it (sandboxed Jinja,
        `add_generation_prompt=True`, `bos_token`/`eos_token` from the tokenizer config).
        A model without a template gets the plain documented fallback: one `role: content` line
        per message, then `assistant:`. Raises NotFoundError, BadInputError (a template error).
        """
        engine = self._engine(model)
        template, special = _chat_template(getattr(engine, "chat_template_dir", None) or engine.engine.model_dir)
        if template is None:
            return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
        try:
            from jinja2 import TemplateError
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message: str) -> None:
                raise TemplateError(message)

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = raise_exception
            return env.from_string(template).render(messages=messages, add_generation_prompt=True, **special)
        except Exception as exc:  # a template that refuses these messages (e.g. role order)
            raise BadInputError(f"model {model!r}: the chat template refused the messages: {exc}", param="messages") from None

    async def generate(self, model: str, prompt: str | list[int], params: dict[str, Any], request_id: str) -> Any:
        """Stream one generation: an async iterator of `GenerationDelta`, the last with `finished=True`.

        Args:
            prompt: text (tokenised by the model's tokenizer) or token ids.
            params: `neural.generation.SamplingParams` fields (temperature, top_p, top_k, seed,
                max_tokens, stop, stop_token_ids, ignore_eos).
            request_id: the engine's request id; leaving the iterator early (or `abort`) cancels
                the request and frees its KV-cache blocks.
        Raises (on the first `__anext__`): NotFoundError, BadInputError (parameters, prompt too
        long, empty prompt), OverloadedError (too many unfinished requests), UnavailableError.
        """
        from neural.errors import QueueFullError
        from neural.generation import SamplingParams

        engine = self._engine(model)
        try:
            sp = SamplingParams(**params)
        except (TypeError, ValueError) as exc:
            raise BadInputError(str(exc).replace("SamplingParams.", ""), param=_param_of(str(exc))) from None
        stream = engine.generate(prompt, sp, request_id)
        try:
            async for out in stream:
                yield GenerationDelta(out.delta_text, out.text, len(out.delta_token_ids), out.finished, out.finish_reason,
                                      out.num_prompt_tokens, len(out.token_ids), out.num_cached_tokens)
        except QueueFullError as exc:
            raise OverloadedError(f"model {model!r}: {exc.max_queue_size} generation requests are unfinished; retry later",
                                  exc.retry_after_s) from None
        except ValueError as exc:
            raise BadInputError(str(exc), param="prompt") from None
        except RuntimeError as exc:
            raise UnavailableError(str(exc), 5.0) from None
        finally:
            await stream.aclose()  # aborts the request (frees its KV blocks) if it did not finish

    async def generate_with_rails(self, model: str, prompt: str | list[int], params: dict[str, Any], request_id: str,
                                  rails: str) -> Any:
        """`generate` wrapped by a knowledge base whose rules act as input and output rails.

        Contract of the rails knowledge base (templates it must define):
          `(deftemplate prompt (slot text))`, `(deftemplate completion (slot text) (slot delta)
          (slot tokens) (slot finished))`, `(deftemplate rail (slot action) (slot text) (slot reason))`.
        Input rail: working memory gets `(prompt (text "<prompt>"))` once; a final `rail` fact with
        action `block` ends the request before generation (its `text` is the answer, finish
        reason `content_filter`); `rewrite` replaces the prompt with its `text`.
        Output rail: after every step, `(completion (text "<all so far>") (delta "<new text>")
        (tokens N) (finished TRUE|FALSE))`; `stop` ends the generation (the delta is replaced by
        the rail's `text`, finish reason `content_filter`, the KV blocks are freed at once);
        `rewrite` replaces the delta with its `text` (e.g. redaction). Token-id prompts skip the
        input rail. The rails' firings are not recorded as a pipeline run.
        Raises as `generate`, plus NotFoundError / InvalidDocumentError for the knowledge base.
        """
        from rules.facts import Fact, String

        wb = self._wb()
        await _call(wb.get_knowledge_base, rails)  # 404 / 422 before any generation
        if isinstance(prompt, str):
            verdict = await self._rail(rails, [Fact("prompt", {"text": String(prompt)})])
            if verdict is not None and verdict["action"] == "block":
                text = verdict["text"]
                yield GenerationDelta(text, text, 0, True, "content_filter", 0, 0, 0)
                return
            if verdict is not None and verdict["action"] == "rewrite":
                prompt = verdict["text"]
        stream = self.generate(model, prompt, params, request_id)
        shown = ""
        try:
            async for d in stream:
                fact = Fact("completion", {"text": String(d.text), "delta": String(d.delta_text), "tokens": d.completion_tokens,
                                           "finished": d.finished})
                verdict = await self._rail(rails, [fact])
                if verdict is not None and verdict["action"] == "stop":
                    shown += verdict["text"]
                    await self.abort(model, request_id)
                    yield GenerationDelta(verdict["text"], shown, d.delta_tokens, True, "content_filter", d.prompt_tokens,
                                          d.completion_tokens, d.cached_tokens)
                    return
                delta = verdict["text"] if verdict is not None and verdict["action"] == "rewrite" else d.delta_text
                shown += delta
                yield GenerationDelta(delta, shown, d.delta_tokens, d.finished, d.finish_reason, d.prompt_tokens,
                                      d.completion_tokens, d.cached_tokens)
        finally:
            await stream.aclose()

    async def _rail(self, kb: str, facts: list[Any]) -> dict[str, str] | None:
        """Run the rails knowledge base on `facts`; the last `rail` fact as `{"action", "text", "reason"}`."""
        result = await _call(self.workbench.run_knowledge_base, kb, facts)
        rails = result.facts_of("rail")
        if not rails:
            return None
        slots = rails[-1].slots
        action = str(slots.get("action", "")).lower()
        if action not in ("block", "rewrite", "stop", "allow"):
            raise ExecutionError(f"rails knowledge base {kb!r}: rail action {action!r}; expected block, rewrite, stop or allow")
        if action == "allow":
            return None
        text = slots.get("text", "")
        return {"action": action, "text": "" if text in (None, "nil") else str(text), "reason": str(slots.get("reason", ""))}

    async def abort(self, model: str, request_id: str) -> None:
        """Cancel a generation and return once its KV-cache blocks are free (unknown ids: no-op)."""
        await self._engine(model).abort(request_id)

    # ---- pipelines and runs (the Workbench facade) -----------------------------------------
    def _wb(self) -> Any:
        self.require_ready()
        if self.workbench is None:
            raise UnavailableError("no workbench is configured on this server", 30.0)
        return self.workbench

    async def list_pipelines(self) -> list[dict[str, Any]]:
        """`[{"name", "versions", "stages", "latest", "file", "description"}]`."""
        wb = self._wb()
        return [p.to_dict() for p in await _call(wb.list_pipelines)]

    async def get_pipeline(self, name: str, version: str | None = None) -> dict[str, Any]:
        """`{"name", "version", "description", "document" (YAML text), "versions": [...], "stages"}`."""
        wb = self._wb()
        p = await _call(wb.get_pipeline, name, version)
        try:
            versions = await _call(wb.pipeline_versions, name)
        except NotFoundError:
            versions = []
        stages = await asyncio.to_thread(wb.store.stages, name)
        return {"name": p.name, "version": p.version, "description": p.description, "document": p.to_yaml(),
                "versions": versions, "stages": stages}

    async def put_pipeline(self, name: str, document: str, stage: str | None = None) -> dict[str, Any]:
        """Validate and store a pipeline version (YAML text); the document's `name` must be `name`.

        Returns `{"name", "version", "created"}` (`created` False when that exact version was
        already stored). Raises InvalidDocumentError (issues with node, field, line and column).
        """
        wb = self._wb()
        from workbench.pipeline.spec import Pipeline

        p = await _call(Pipeline.from_yaml, document)
        if p.name != name:
            raise InvalidDocumentError(f"the document's name is {p.name!r} but the URL names {name!r}", param="name",
                                       details=[{"field": "name", "message": f"expected {name!r}, got {p.name!r}"}])
        existed = any(v["version"] == p.version for v in await self._versions_or_empty(name))
        version = await _call(wb.save_pipeline, p, stage=stage)
        return {"name": name, "version": version, "created": not existed}

    async def _versions_or_empty(self, name: str) -> list[dict[str, Any]]:
        try:
            return await _call(self._wb().pipeline_versions, name)
        except NotFoundError:
            return []

    async def delete_pipeline(self, name: str) -> int:
        """Delete every stored version of `name` (recorded runs are kept); returns how many."""
        return await _call(self._wb().delete_pipeline, name)

    async def promote(self, name: str, version: str, stage: str) -> str:
        """Point `stage` at a stored version; returns the full version."""
        return await _call(self._wb().promote, name, version, stage)

    async def predict(self, name: str, inputs: dict[str, Any], *, version: str | None = None, explain: bool = False) -> dict[str, Any]:
        """Run a pipeline on one input; returns the run as a dict (`RunResult.to_dict()`).

        A run that fails inside a node is returned with `status: "failed"` and the node named.
        Raises NotFoundError, BadInputError (input does not match the schema: node and JSON
        path), InvalidDocumentError, OverloadedError (a model queue is full; nothing ran).
        """
        wb = self._wb()
        result = await _acall(wb.run(name, inputs, version=version, explain=explain))
        return result.to_dict()

    async def predict_many(self, name: str, inputs: list[dict[str, Any]], *, version: str | None = None,
                           explain: bool = False) -> list[dict[str, Any]]:
        """Run a pipeline on many inputs at once (their model calls batch together).

        Returns one item per input, in order: the run's dict, or `{"error": {code, message,
        param}}` for an input that was refused (bad input, full queue), so one bad input loses
        nothing else. Raises NotFoundError, InvalidDocumentError for the pipeline itself.
        """
        wb = self._wb()
        items = await _acall(wb.run_many(name, inputs, version=version, explain=explain))
        out = []
        for item in items:
            if isinstance(item, BaseException):
                err = _translate(item)
                out.append({"error": {"code": _code_of(err), "message": err.message, "param": err.param}})
            else:
                out.append(item.to_dict())
        return out

    async def get_run(self, run_id: str) -> dict[str, Any]:
        """A recorded run with its trace: `RunResult.to_dict()` plus `"trace": [events]`."""
        wb = self._wb()
        run = await _call(wb.get_run, run_id)
        doc = run.to_dict()
        doc["trace"] = await _call(wb.get_trace, run.run_id)
        return doc

    async def list_runs(self, pipeline: str | None, status: str | None, limit: int) -> list[dict[str, Any]]:
        """Recorded runs, newest first."""
        wb = self._wb()
        return [r.to_dict() for r in await _call(wb.list_runs, pipeline, status, None, limit)]

    # ---- knowledge bases ---------------------------------------------------------------------
    async def list_knowledge_bases(self) -> list[dict[str, Any]]:
        """`[{"name", "version", "templates", "rules", "files", ...}]` (invalid files with `errors`)."""
        return await _call(self._wb().list_knowledge_bases)

    async def get_knowledge_base(self, name: str) -> dict[str, Any]:
        """Summary plus `sources`: `[{"file", "text"}]`."""
        wb = self._wb()
        kb = await _call(wb.get_knowledge_base, name)
        doc = dict(wb.library.describe(kb))
        doc["sources"] = [{"file": f, "text": t} for f, t in kb.sources]
        return doc

    async def upload_knowledge_base(self, name: str, text: str) -> dict[str, Any]:
        """Validate rule text and save it as knowledge base `name`; returns its summary and whether
        it was new. Raises InvalidDocumentError with `file:line:col` details (nothing written)."""
        wb = self._wb()
        existed = name in await asyncio.to_thread(wb.library.names)
        kb = await _call(wb.upload_knowledge_base, name, text)
        return {**wb.library.describe(kb), "created": not existed}

    async def run_knowledge_base(self, name: str, facts: list[Any], *, strategy: str | None, max_firings: int | None,
                                 timeout_s: float | None) -> dict[str, Any]:
        """Forward chaining: facts in, `ForwardResult.to_dict()` out (working memory, firings, output)."""
        wb = self._wb()
        result = await _call(wb.run_knowledge_base, name, facts, strategy=strategy, max_firings=max_firings, timeout=timeout_s)
        return result.to_dict()

    async def ask(self, name: str, goal: str, facts: list[Any], *, all: bool, max_answers: int | None,
                  max_depth: int | None) -> dict[str, Any]:
        """Backward chaining: `{"proved", "answers": [{"bindings", "certainty", "proof"}], "skipped_rules"}`."""
        wb = self._wb()
        kwargs = dict(all=all, max_answers=max_answers, max_depth=max_depth)
        if inspect.iscoroutinefunction(wb.ask):
            return _jsonable(await _acall(wb.ask(name, goal, facts, **kwargs)))
        return _jsonable(await _call(wb.ask, name, goal, facts, **kwargs))


@dataclass(slots=True)
class GenerationDelta:
    """One streamed step of a generation: new text, totals so far, and the finish reason at the end."""

    delta_text: str
    text: str
    delta_tokens: int
    finished: bool
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


# ---- translating runtime errors ------------------------------------------------------------------
async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking facade call in a thread, translating its errors to ServingError."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except ServingError:
        raise
    except Exception as exc:
        raise _translate(exc) from exc


async def _acall(coro: Any) -> Any:
    try:
        return await coro
    except ServingError:
        raise
    except Exception as exc:
        raise _translate(exc) from exc


def _translate(exc: BaseException) -> ServingError:
    """Map an error of `rules`, `chaining`, `neural` or `workbench.pipeline` to a ServingError."""
    from neural import errors as ne
    from workbench.pipeline import errors as pe

    if isinstance(exc, ServingError):
        return exc
    if isinstance(exc, pe.NotFoundError):
        return NotFoundError(exc.kind, exc.name)._with(str(exc))
    if isinstance(exc, ne.ModelNotFoundError):
        return NotFoundError("model", exc.name)._with(str(exc))
    if isinstance(exc, pe.PipelineValidationError):
        details = [i.to_dict() for i in exc.issues]
        first = exc.issues[0] if exc.issues else None
        return InvalidDocumentError(str(exc), param=(f"{first.node}.{first.field}" if first and first.node else first.field if first else None),
                                    details=details)
    if isinstance(exc, pe.KnowledgeBaseError):
        details = [d.to_dict() if hasattr(d, "to_dict") else {"message": str(d)} for d in exc.diagnostics]
        return InvalidDocumentError(str(exc), param="text", details=details)
    if isinstance(exc, pe.InputValidationError):
        return BadInputError(str(exc), param=exc.field, details=[{"node": exc.node, "loc": exc.field, "msg": exc.message}])
    if isinstance(exc, ne.QueueFullError):
        return OverloadedError(str(exc), exc.retry_after_s)
    if isinstance(exc, ne.RequestTimeoutError):
        return DeadlineError(str(exc))
    if isinstance(exc, ne.BatcherClosedError):
        return UnavailableError(str(exc), 5.0)
    if isinstance(exc, ne.InputValidationError):
        return BadInputError(str(exc), param=exc.input_name)
    if isinstance(exc, pe.RunFailedError):
        return ExecutionError(str(exc))
    if _is_rule_error(exc):
        diags = getattr(exc, "diagnostics", None)
        details = [d.to_dict() for d in diags] if diags else []
        if details:
            return InvalidDocumentError(str(exc), details=details)
        return BadInputError(str(exc))
    if isinstance(exc, pe.WorkbenchError):
        return ExecutionError(str(exc))
    if isinstance(exc, (ValueError, KeyError, TypeError, LookupError)):
        return BadInputError(str(exc))
    log.error("unexpected error in the serving layer", exc_info=exc)
    return ServingError(f"internal error ({type(exc).__name__})")


def _is_rule_error(exc: BaseException) -> bool:
    from chaining.forward import ForwardError
    from rules.errors import RuleError
    from rules.facts import FactError

    if isinstance(exc, (RuleError, FactError)):
        return True
    if isinstance(exc, ForwardError):
        return True
    try:
        from chaining.backward import BackwardError  # type: ignore[attr-defined]
    except ImportError:
        return False
    return isinstance(exc, BackwardError)


def _code_of(err: ServingError) -> str:
    return {NotFoundError: "not_found", BadInputError: "validation_failed", InvalidDocumentError: "validation_failed",
            OverloadedError: "queue_full", UnavailableError: "unavailable", DeadlineError: "timeout",
            ExecutionError: "execution_failed", ConflictError: "conflict"}.get(type(err), "internal_error")


def _param_of(message: str) -> str | None:
    import re

    m = re.search(r"SamplingParams\.(\w+)", message)
    return m.group(1) if m else None


def _jsonable(value: Any) -> Any:
    """Proof trees and bindings as plain JSON (objects with `to_dict()` are converted)."""
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _chat_template(model_dir: Any) -> tuple[str | None, dict[str, Any]]:
    import json
    from pathlib import Path

    root = Path(model_dir)
    special: dict[str, Any] = {}
    template = None
    cfg_file = root / "tokenizer_config.json"
    if cfg_file.is_file():
        cfg = json.loads(cfg_file.read_text())
        template = cfg.get("chat_template")
        if isinstance(template, list):  # named templates: use "default"
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
            tok = cfg.get(key)
            special[key] = tok.get("content") if isinstance(tok, dict) else tok
    jinja_file = root / "chat_template.jinja"
    if template is None and jinja_file.is_file():
        template = jinja_file.read_text()
    return template, special


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
    """The `Workbench` facade built from settings."""
    from workbench.workbench import Workbench

    return Workbench(settings)
