"""`Serving`: what the HTTP API serves; start-up loading, readiness, metrics."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from workbench.config import Settings, get_settings

from .errors import UnavailableError
from .generation import GenerationServing
from .library import LibraryServing
from .models import ModelServing

log = logging.getLogger("workbench.serving")
STOP_LOADING_WAIT_S = 120.0  # `Serving.stop` waits this long for a start-up loading step in progress


class Serving(ModelServing, GenerationServing, LibraryServing):
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
        load: Callable[[Serving], None] | None = None,
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
        self._stopping = False  # set by stop(): the loading thread starts no further step
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
        if self._registry is None and wb is not None and self._load_models and not self._stopping:
            wb.load_models(None if self._load_models is True else list(self._load_models))
        if self._serve_demo_lm and not self._stopping:
            self._start_demo_lm()
        if self._load_fn is not None and not self._stopping:
            self._load_fn(self)
        freeze_startup_heap()

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Wait until loading ends. Raises UnavailableError if it failed or took longer than `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self._state == "loading" and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self._state != "ready":
            raise UnavailableError(
                f"the server is not ready ({self._state}{': ' + self._error if self._error else ''})"
            )

    async def stop(self) -> None:
        """Stop background loading and close what this object created.

        Loading runs in a thread, which cannot be interrupted: it is told to start no further step and
        waited for (at most `STOP_LOADING_WAIT_S`), so that what it made by then (the workbench and its
        recorder, a generation engine) is closed here too. Cancelling only the task that awaited the
        thread left them running after the server stopped (their threads outlived it, seen in the tests)."""
        self._stopping = True
        if self._task is not None and not self._task.done():
            _, pending = await asyncio.wait({self._task}, timeout=STOP_LOADING_WAIT_S)
            if pending:
                log.warning(
                    "start-up loading still runs after %s s; what it makes later is not closed", STOP_LOADING_WAIT_S
                )
                self._task.cancel()
        for name, engine in list(self._engines.items()):
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
        import gc

        gc.unfreeze()  # what start-up froze is collectable again (extension types report leaks at exit otherwise)

    @property
    def multiprocess(self) -> bool:
        """True when metrics are shared by several worker processes (`metrics_text` has them all)."""
        from neural.metrics import multiprocess_dir

        return multiprocess_dir() is not None

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
        """Prometheus text of the runtime registries (models, generation, pipelines). With several
        worker processes (`PROMETHEUS_MULTIPROC_DIR`, set by `workbench serve --workers N`): every
        metric of every worker, the HTTP ones included (see `multiprocess`)."""
        from prometheus_client import REGISTRY, generate_latest

        from neural.metrics import METRICS_REGISTRY, multiprocess_dir, multiprocess_text

        if multiprocess_dir() is not None:
            return multiprocess_text()

        parts = [generate_latest(METRICS_REGISTRY).decode(), generate_latest(REGISTRY).decode()]
        wb_reg = getattr(self.workbench, "metrics_registry", None)
        for reg in [wb_reg, *_extra_registries()]:
            if reg is None or reg is METRICS_REGISTRY or reg is REGISTRY:
                continue
            parts.append(generate_latest(reg).decode())
        return "".join(parts)


def freeze_startup_heap() -> None:
    """Move every object alive after start-up (modules, models, knowledge bases: ~400k objects
    with torch and transformers imported) to the collector's permanent generation (`gc.freeze`,
    CPython 3.7+; what Instagram's and other pre-forking servers do after loading).

    Why: the cyclic garbage collector's full (generation 2) collections scan every tracked
    object. Measured on `demo_digits` predict at concurrency 64: 600k objects, a full collection
    every ~0.7 s taking ~0.3 s with the GIL held, so the process stood still ~28% of the time
    (docs/serving.md, "Cost per request"). Frozen objects are not scanned any more; the ones made
    while serving still are. The garbage present now is collected first; objects frozen are
    not collected by the cyclic collector until `stop` unfreezes them (start-up state lives as long
    as the server anyway)."""
    import gc

    gc.collect()
    gc.freeze()


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
    """The `Workbench` facade built from settings; durable recording unless
    `serving.record_before_answer` is off (a 200 answer then means the run is committed)."""
    from workbench.workbench import Workbench

    return Workbench(settings, durable=settings.serving.record_before_answer)
