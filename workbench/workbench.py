"""`Workbench`: the one object the CLI, the REST API, the TUI and scripts use.

    from workbench import Workbench, Pipeline

    with Workbench.open() as wb:
        result = wb.run_sync("digits", {"pixels": [...]}, explain=True)

It owns the run store, the knowledge-base library (`knowledge_bases/`), the pipeline folder
(`pipelines/`), the model catalogue (`models/catalog.yaml`, models registered in code, the
built-in all-MiniLM-L6-v2) and the executor. Async methods (`run`, `run_many`, `replay`,
`infer`) are for event loops (FastAPI, Textual); each has a `*_sync` twin for scripts that runs
on a private event-loop thread. Errors are the classes in `workbench.pipeline.errors`
(`NotFoundError` -> 404, `PipelineValidationError` -> 422, `InputValidationError` -> 422) and
`neural.errors.QueueFullError` unchanged (-> 429/503 with Retry-After).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from chaining.forward import EngineConfig
from workbench.config import Settings, get_settings
from workbench.facade.knowledge import KnowledgeMixin
from workbench.facade.models import ModelsMixin
from workbench.facade.pipelines import (
    PIPELINE_SUFFIXES,
    REPO_ROOT,
    RESOLVE_TTL_S,
    PipelineInfo,
    PipelinesMixin,
    default_knowledge_base_dir,
    default_model_catalog,
    default_pipeline_dir,
)
from workbench.facade.runs import ConsistentStore, RunsMixin
from workbench.pipeline.catalog import ModelCatalog
from workbench.pipeline.errors import (
    KnowledgeBaseNotFoundError,
)
from workbench.pipeline.executor import Executor, Runtime, default_workers
from workbench.pipeline.handoff import RunPool
from workbench.pipeline.knowledge import KnowledgeBaseLibrary
from workbench.pipeline.recorder import RunRecorder
from workbench.pipeline.replay import ReplayResult
from workbench.pipeline.result import RunResult
from workbench.pipeline.spec import Pipeline
from workbench.store import Store

T = TypeVar("T")


class Workbench(PipelinesMixin, RunsMixin, KnowledgeMixin, ModelsMixin):
    """Pipelines, knowledge bases, models and recorded runs behind one object.

    Args:
        settings: defaults to `get_settings()` (environment `WORKBENCH_*`).
        store: an open `Store` (default: `Store.open(settings.database_url)`).
        knowledge_base_dir, pipeline_dir, model_catalog: override the settings / defaults.
        functions: Python functions callable from rules, by name.
        device: model device (`auto|cpu|cuda`; default from settings).
        durable: True: `run` returns only after the run and its trace are committed. False (default):
            write-behind — the run id is returned at once and the record is committed by a background
            writer (group commit); this Workbench's own reads (`get_run`, `list_runs`, `get_trace`,
            the result cache) wait for pending writes first, and `close()` writes everything. A
            write that fails is logged and counted (`workbench_pipeline_record_failures_total`).

    Raises:
        workbench.store.StoreError: the database cannot be opened or is newer than this code.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: Store | None = None,
        knowledge_base_dir: str | Path | None = None,
        pipeline_dir: str | Path | None = None,
        model_catalog: str | Path | None = None,
        functions: Mapping[str, Callable] | None = None,
        device: str | None = None,
        durable: bool = False,
    ):
        self.settings = settings or get_settings()
        real_store = store or Store.open(self.settings.database_url)
        self.knowledge_base_dir = Path(
            knowledge_base_dir or self.settings.knowledge_base_dir or default_knowledge_base_dir()
        )
        self.pipeline_dir = Path(pipeline_dir or self.settings.pipeline_dir or default_pipeline_dir())
        dev = device or self.settings.device
        self.device = None if dev == "auto" else dev
        self.library = KnowledgeBaseLibrary(
            self.knowledge_base_dir,
            allow_unsafe=self.settings.allow_unsafe_rules,
            functions=functions,
            max_engines=self.settings.max_forward_engines,
            engine_config=EngineConfig(
                timeout=10.0, max_firings=100_000, memory_limit=self.settings.rules.memory_limit_bytes
            ),
        )
        self.catalog = ModelCatalog(
            model_catalog or default_model_catalog(), device=self.device, on_load=self._model_loaded
        )
        self.recorder = RunRecorder(real_store)
        self.store = ConsistentStore(real_store, self.recorder)
        self.pool = RunPool(  # carries RUN_IDENTITY (workbench.pipeline.identity) to the steps; later steps first
            self.settings.serving.run_workers or default_workers(), thread_name_prefix="workbench-run"
        )
        self.runtime = Runtime(self.library, self.catalog, real_store, self.recorder, durable, self.pool)
        self.executor = Executor(self.runtime)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._required_models: list[str] | None = None
        self._valid: set[str] = set()  # pipeline versions validated and stored by this workbench
        self._resolved: dict[tuple[str, str | None], tuple[float, Pipeline, tuple | None]] = {}
        self._resolving: dict[tuple[str, str | None], tuple[int, asyncio.Task]] = {}  # refreshes in flight
        self._resolve_generation = 0  # bumped when a stage changes or a version is stored or deleted
        self._shared_base_dirs: dict[int, tuple[Pipeline, str]] = {}  # id(shared pipeline) -> (it, its base dir)
        self._parsed: dict[str, tuple[tuple, Pipeline]] = {}

    @classmethod
    def open(cls, **kwargs: Any) -> Workbench:
        """`Workbench(**kwargs)`; reads settings from the environment."""
        return cls(**kwargs)

    # ------------------------------------------------------------------------------------------
    # pipelines
    # ------------------------------------------------------------------------------------------
    # ------------------------------------------------------------------------------------------
    # metrics, sync wrappers, lifecycle
    # ------------------------------------------------------------------------------------------
    @property
    def metrics_registry(self) -> Any:
        """The prometheus `CollectorRegistry` with model, batcher, generation and pipeline metrics."""
        from neural.metrics import METRICS_REGISTRY

        return METRICS_REGISTRY

    def metrics_text(self) -> bytes:
        """Prometheus exposition text of `metrics_registry`."""
        from prometheus_client import generate_latest

        return generate_latest(self.metrics_registry)

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=self._loop.run_forever, name="workbench-loop", daemon=True)
                self._loop_thread.start()
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result()

    def run_sync(self, pipeline: Pipeline | str, inputs: dict[str, Any], **kwargs: Any) -> RunResult:
        """Blocking `run` for scripts (runs on the workbench's own event-loop thread)."""
        return self._sync(self.run(pipeline, inputs, **kwargs))

    def run_many_sync(
        self, pipeline: Pipeline | str, inputs: Iterable[dict[str, Any]], **kwargs: Any
    ) -> list[RunResult | BaseException]:
        """Blocking `run_many`."""
        return self._sync(self.run_many(pipeline, inputs, **kwargs))

    def replay_sync(self, run_id: str, **kwargs: Any) -> ReplayResult:
        """Blocking `replay`."""
        return self._sync(self.replay(run_id, **kwargs))

    def infer_sync(self, name: str, item: Any, **kwargs: Any) -> Any:
        return self.catalog.get(name).infer_sync(item, **kwargs)

    def close(self) -> None:
        """Finish writing recorded runs, stop model batchers and CLIPS environments, close the store."""
        if self._closed:
            return
        self._closed = True
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.recorder.close()
        self.catalog.close()
        self.library.close()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(5)
            self._loop.close()
        self.store.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Workbench:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> Workbench:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


__all__ = [
    "PIPELINE_SUFFIXES",
    "REPO_ROOT",
    "RESOLVE_TTL_S",
    "ConsistentStore",
    "KnowledgeBaseNotFoundError",
    "PipelineInfo",
    "Workbench",
    "default_knowledge_base_dir",
    "default_model_catalog",
    "default_pipeline_dir",
]
