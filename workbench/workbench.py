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
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from workbench.config import Settings, get_settings
from workbench.pipeline.catalog import ModelCatalog
from workbench.pipeline.errors import (
    KnowledgeBaseError,
    KnowledgeBaseNotFoundError,
    PipelineNotFoundError,
    PipelineValidationError,
    RunFailedError,
    RunNotFoundError,
)
from workbench.pipeline.executor import Executor, Runtime, default_workers
from workbench.pipeline.knowledge import KnowledgeBaseLibrary
from workbench.pipeline.recorder import RunRecorder
from workbench.pipeline.replay import ReplayResult, diff_runs
from workbench.pipeline.result import RunResult
from workbench.pipeline.spec import Pipeline
from workbench.pipeline.validate import validate as validate_pipeline
from workbench.store import Store
from workbench.store.database import StoreError
from workbench.store.store import STAGES

T = TypeVar("T")
RESOLVE_TTL_S = 1.0  # how long a name -> pipeline version resolution is reused by runs
REPO_ROOT = Path(__file__).resolve().parents[1]
PIPELINE_SUFFIXES = (".yaml", ".yml")


def default_knowledge_base_dir() -> Path:
    """`./knowledge_bases` when it exists, else the folder shipped beside the installed package."""
    here = Path("knowledge_bases")
    return here if here.is_dir() else REPO_ROOT / "knowledge_bases"


def default_pipeline_dir() -> Path:
    here = Path("pipelines")
    return here if here.is_dir() or not (REPO_ROOT / "pipelines").is_dir() else REPO_ROOT / "pipelines"


def default_model_catalog() -> Path:
    here = Path("models/catalog.yaml")
    return here if here.is_file() else REPO_ROOT / "models" / "catalog.yaml"


class ConsistentStore:
    """The run store as seen through a Workbench: every read (`session`, `get_run`, `list_runs`,
    `cached_run`) first waits for the runs this Workbench is still writing behind, so code in this
    process always reads its own writes. Everything else is the `Store` itself."""

    def __init__(self, store: Store, recorder: RunRecorder):
        self._store = store
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def inner(self) -> Store:
        return self._store

    def session(self) -> Any:
        self._recorder.flush()
        return self._store.session()

    def get_run(self, run_id: str) -> Any:
        self._recorder.flush()
        return self._store.get_run(run_id)

    def list_runs(self, *args: Any, **kwargs: Any) -> Any:
        self._recorder.flush()
        return self._store.list_runs(*args, **kwargs)

    def cached_run(self, *args: Any, **kwargs: Any) -> Any:
        self._recorder.flush()
        return self._store.cached_run(*args, **kwargs)


@dataclass(slots=True)
class PipelineInfo:
    """A pipeline known to the workbench: stored versions, stage labels, and its file if any."""

    name: str
    versions: int = 0
    stages: dict[str, str] = field(default_factory=dict)
    latest: str | None = None
    file: str | None = None
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "versions": self.versions,
            "stages": self.stages,
            "latest": self.latest,
            "file": self.file,
            "description": self.description,
        }


class Workbench:
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
            self.knowledge_base_dir, allow_unsafe=self.settings.allow_unsafe_rules, functions=functions
        )
        self.catalog = ModelCatalog(
            model_catalog or default_model_catalog(), device=self.device, on_load=self._model_loaded
        )
        self.recorder = RunRecorder(real_store)
        self.store = ConsistentStore(real_store, self.recorder)
        self.pool = concurrent.futures.ThreadPoolExecutor(
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

    @classmethod
    def open(cls, **kwargs: Any) -> Workbench:
        """`Workbench(**kwargs)`; reads settings from the environment."""
        return cls(**kwargs)

    # ------------------------------------------------------------------------------------------
    # pipelines
    # ------------------------------------------------------------------------------------------
    def pipeline_files(self) -> dict[str, Path]:
        """`{name: path}` of the YAML files in the pipeline folder (name = file stem)."""
        if not self.pipeline_dir.is_dir():
            return {}
        return {p.stem: p for p in sorted(self.pipeline_dir.iterdir()) if p.suffix in PIPELINE_SUFFIXES and p.is_file()}

    def list_pipelines(self) -> list[PipelineInfo]:
        """Every pipeline in the store or the pipeline folder, by name."""
        files = self.pipeline_files()
        out: dict[str, PipelineInfo] = {}
        for name in self.store.pipeline_names():
            rows = self.store.pipeline_versions(name)
            info = PipelineInfo(name, len(rows), self.store.stages(name), rows[-1].version if rows else None)
            try:
                info.description = Pipeline.from_yaml(rows[-1].document).description if rows else None
            except PipelineValidationError:
                pass
            out[name] = info
        for name, path in files.items():
            info = out.setdefault(name, PipelineInfo(name))
            info.file = str(path)
            if info.description is None:
                try:
                    info.description = Pipeline.from_file(path).description
                except (PipelineValidationError, OSError):
                    pass
        return [out[k] for k in sorted(out)]

    def get_pipeline(self, name: str, version: str | None = None) -> Pipeline:
        """Resolve a pipeline: `version` (a unique prefix is enough) from the store; else the
        `production` stage; else the file `pipelines/NAME.yaml`; else the newest stored version.

        Raises:
            PipelineNotFoundError: nothing matches.
            PipelineValidationError: the document does not parse.
        """
        try:
            if version is not None:
                row = self.store.get_pipeline(name, version)
                if row is None:
                    raise PipelineNotFoundError(name, f"no stored version {version!r}")
                return self._from_row(row)
            stages = self.store.stages(name)
            if "production" in stages:
                return self._from_row(self.store.get_pipeline(name, stages["production"]))
        except StoreError as exc:
            raise PipelineNotFoundError(name, str(exc)) from exc
        path = self.pipeline_files().get(name)
        if path is not None:
            return Pipeline.from_file(path)
        row = self.store.get_pipeline(name)
        if row is None:
            raise PipelineNotFoundError(name, f"not stored and no file {self.pipeline_dir / (name + '.yaml')}")
        return self._from_row(row)

    def _from_row(self, row: Any) -> Pipeline:
        return Pipeline.from_yaml(row.document, filename=f"{row.name}@{row.version[:12]}")

    def load_pipeline_file(self, path: str | Path) -> Pipeline:
        """Parse a pipeline YAML file (structure only; see `validate`)."""
        return Pipeline.from_file(path)

    def validate(self, pipeline: Pipeline | str, *, load_models: bool = False) -> list[Any]:
        """Issues (`workbench.pipeline.Issue`, each naming node and field) of a pipeline; empty when valid."""
        p = self.get_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
        return validate_pipeline(p, self.library, self.catalog, base_dir=self._base_dir(p), load_models=load_models)

    def check(self, pipeline: Pipeline, *, load_models: bool = False) -> None:
        """Raise PipelineValidationError when `validate` finds issues."""
        issues = self.validate(pipeline, load_models=load_models)
        if issues:
            raise PipelineValidationError(issues)

    def save_pipeline(
        self, pipeline: Pipeline | str, *, validate: bool = True, stage: str | None = None, write_file: bool = False
    ) -> str:
        """Store a pipeline version (YAML text or a Pipeline); returns its version (content hash).

        Args:
            validate: refuse an invalid pipeline (PipelineValidationError, nothing stored).
            stage: also point this stage (`production` / `staging`) at the version.
            write_file: also write `pipelines/NAME.yaml`.
        """
        p = Pipeline.from_yaml(pipeline) if isinstance(pipeline, str) else pipeline
        if validate:
            self.check(p)
        text = p.to_yaml()
        self.store.save_pipeline(p.name, p.version, text)
        self._resolved.clear()
        if stage is not None:
            self.promote(p.name, p.version, stage)
        if write_file:
            p.save(self.pipeline_dir / f"{p.name}.yaml")
        return p.version

    def pipeline_versions(self, name: str) -> list[dict[str, Any]]:
        """Stored versions, oldest first: `{"version", "created_at", "stages": [...]}`.

        Raises PipelineNotFoundError when nothing is stored under `name`."""
        rows = self.store.pipeline_versions(name)
        if not rows:
            raise PipelineNotFoundError(name, "no stored versions")
        stages = self.store.stages(name)
        return [
            {
                "version": r.version,
                "created_at": r.created_at.isoformat() if r.created_at else None,
                "stages": sorted(s for s, v in stages.items() if v == r.version),
            }
            for r in rows
        ]

    def promote(self, name: str, version: str, stage: str = "production") -> str:
        """Point `stage` at a stored version (rollback: promote an older one); returns the full version.

        Raises:
            PipelineNotFoundError: no such stored version; ValueError: unknown stage.
        """
        if stage not in STAGES:
            raise ValueError(f"stage {stage!r}: expected one of {', '.join(STAGES)}")
        try:
            return self.store.set_stage(name, version, stage)
        except StoreError as exc:
            raise PipelineNotFoundError(name, str(exc)) from exc
        finally:
            self._resolved.clear()

    def delete_pipeline(self, name: str, *, delete_file: bool = False) -> int:
        """Delete every stored version and stage label (runs are kept); returns versions deleted.

        Raises PipelineNotFoundError when neither stored nor (with delete_file) a file."""
        n = self.store.delete_pipeline(name)
        self._resolved.clear()
        path = self.pipeline_files().get(name)
        if delete_file and path is not None:
            path.unlink()
            n += 0 if n else 1
        if n == 0:
            raise PipelineNotFoundError(name)
        return n

    def _base_dir(self, p: Pipeline) -> str:
        if p.source_file and Path(p.source_file).exists():
            return str(Path(p.source_file).resolve().parent)
        return str(self.pipeline_dir)

    def _resolve(self, pipeline: Pipeline | str, version: str | None) -> Pipeline:
        """`get_pipeline` for runs, cached: a name's resolution is reused for `RESOLVE_TTL_S` seconds
        (stage changes made by this Workbench apply at once; a pipeline file is re-read when it changes).
        The cached Pipeline is shared by runs and never mutated."""
        if not isinstance(pipeline, str):
            return pipeline
        key = (pipeline, version)
        now = time.monotonic()
        hit = self._resolved.get(key)
        if hit is not None and now - hit[0] < RESOLVE_TTL_S and hit[2] == self._file_stamp(hit[1]):
            return hit[1]
        p = self.get_pipeline(pipeline, version)
        self._resolved[key] = (now, p, self._file_stamp(p))
        return p

    @staticmethod
    def _file_stamp(p: Pipeline) -> tuple | None:
        if not p.source_file or not Path(p.source_file).is_file():
            return None
        st = Path(p.source_file).stat()
        return (st.st_mtime_ns, st.st_size)

    # ------------------------------------------------------------------------------------------
    # runs
    # ------------------------------------------------------------------------------------------
    async def run(
        self,
        pipeline: Pipeline | str,
        inputs: dict[str, Any],
        *,
        version: str | None = None,
        explain: bool = False,
        record: bool = True,
        raise_on_error: bool = False,
        validate: bool = True,
    ) -> RunResult:
        """Run a pipeline (a name, resolved as `get_pipeline`, or a `Pipeline`) on one input.

        The pipeline version is stored (if new) before the run so every recorded run points at
        its document. Returns a `RunResult` (status "failed" names the node unless
        `raise_on_error`, which raises RunFailedError).

        Raises:
            PipelineNotFoundError, PipelineValidationError, InputValidationError (bad input: node
            and JSON path), neural.errors.QueueFullError (retry later), RunFailedError.
        """
        p = self._resolve(pipeline, version)
        if validate:
            await self._ensure_valid(p)
        result = await self.executor.run(p, inputs, explain=explain, record=record, base_dir=self._base_dir(p))
        if raise_on_error and not result.ok:
            raise RunFailedError(result)
        return result

    async def _ensure_valid(self, p: Pipeline) -> None:
        key = p.version
        if key in self._valid:
            return
        issues = await asyncio.to_thread(self.validate, p)
        if issues:
            raise PipelineValidationError(issues)
        self.store.save_pipeline(p.name, key, p.to_yaml())
        self._valid.add(key)

    async def run_many(
        self,
        pipeline: Pipeline | str,
        inputs: Iterable[dict[str, Any]],
        *,
        version: str | None = None,
        explain: bool = False,
        record: bool = True,
        concurrency: int = 64,
        on_result: Callable[[int, RunResult | BaseException], None] | None = None,
    ) -> list[RunResult | BaseException]:
        """Run many inputs concurrently (at most `concurrency` in flight; their model calls batch together).

        Returns one item per input, in input order: a RunResult, or the exception that input
        raised (InputValidationError, QueueFullError) so one bad input loses nothing else.
        `on_result(index, item)` is called as each finishes (progress bars).
        """
        p = self._resolve(pipeline, version)
        await self._ensure_valid(p)
        items = list(inputs)
        sem = asyncio.Semaphore(max(1, concurrency))
        out: list[Any] = [None] * len(items)

        async def one(i: int, x: dict[str, Any]) -> None:
            async with sem:
                try:
                    out[i] = await self.run(p, x, explain=explain, record=record, validate=False)
                except Exception as exc:  # reported per input
                    out[i] = exc
            if on_result is not None:
                on_result(i, out[i])

        await asyncio.gather(*(one(i, x) for i, x in enumerate(items)))
        return out

    def list_runs(
        self, pipeline: str | None = None, status: str | None = None, since: datetime | None = None, limit: int = 50
    ) -> list[RunResult]:
        """Recorded runs, newest first (explanations included as recorded)."""
        return [RunResult.from_row(r) for r in self.store.list_runs(pipeline, status, since, limit)]

    def get_run(self, run_id: str) -> RunResult:
        """One recorded run (a unique id prefix of 4+ characters is enough). Raises RunNotFoundError."""
        row = self.store.get_run(run_id)
        if row is None:
            raise RunNotFoundError(run_id)
        return RunResult.from_row(row)

    def get_trace(self, run_id: str) -> list[dict[str, Any]]:
        """The trace events of a run, in order: `{"seq", "kind", "node", "at", "payload"}`. Raises RunNotFoundError."""
        row = self.store.get_run(run_id)
        if row is None:
            raise RunNotFoundError(run_id)
        return [{"seq": e.seq, "kind": e.kind, "node": e.node, "at": e.at, "payload": e.payload} for e in row.events]

    async def replay(
        self, run_id: str, *, knowledge_bases: Mapping[str, str | Path] | None = None, record: bool = True
    ) -> ReplayResult:
        """Re-run a recorded run on the same pipeline version, optionally with edited knowledge bases.

        Args:
            knowledge_bases: `{name: path to a .clp file, or rule text}` replacing the knowledge
                base of that name for this replay only.
        Returns:
            ReplayResult with the original and the new run and what changed (outputs, gate
            branches, rules fired, knowledge-base versions).
        Raises:
            RunNotFoundError; PipelineNotFoundError (the pipeline version is no longer stored);
            KnowledgeBaseError (an edited knowledge base does not validate or is not UTF-8);
            KnowledgeBaseNotFoundError (a name the pipeline does not use).
        """
        original = self.get_run(run_id)
        p = self.get_pipeline(original.pipeline, original.version)
        sources: dict[str, tuple[str, str | None]] = {}  # name -> (rule text, file name)
        if knowledge_bases:
            used = sorted({kb_name for node in p.nodes.values() for kb_name in node.knowledge_bases})
            for name, src in knowledge_bases.items():
                if name not in used:
                    raise KnowledgeBaseNotFoundError(
                        name, f"pipeline {p.name!r} does not use it; it uses: {', '.join(used) or '(none)'}"
                    )
                src_s = str(src)
                if "\n" not in src_s and "(" not in src_s and Path(src_s).is_file():
                    try:
                        sources[name] = (Path(src_s).read_bytes().decode("utf-8"), src_s)
                    except UnicodeDecodeError as exc:
                        raise KnowledgeBaseError(
                            name, [f"{src_s}: not UTF-8 text (byte {exc.start}: {exc.reason})"]
                        ) from None
                else:
                    sources[name] = (src_s, None)
        library = self.library
        if sources:
            library = KnowledgeBaseLibrary(
                self.knowledge_base_dir,
                allow_unsafe=self.library.allow_unsafe,
                functions=self.library.functions,
                engine_config=self.library.engine_config,
            )
            try:
                for name, (text, filename) in sources.items():
                    kb = library.from_text(name, text, filename=filename) if filename else library.from_text(name, text)
                    library.override(name, kb)
            except BaseException:
                library.close()
                raise
        executor = (
            Executor(Runtime(library, self.catalog, self.store, self.recorder, self.runtime.durable, self.pool))
            if knowledge_bases
            else self.executor
        )
        try:
            new = await executor.run(
                p,
                original.inputs,
                explain=True,
                record=record,
                base_dir=self._base_dir(p),
                replay_of=original.run_id,
                use_cache=False,
            )
        finally:
            if library is not self.library:
                library.close()
        old_trace = self.get_trace(original.run_id) if original.run_id else []
        new_trace = self.get_trace(new.run_id) if new.run_id else []
        return ReplayResult(original, new, diff_runs(original, new, old_trace, new_trace))

    # ------------------------------------------------------------------------------------------
    # knowledge bases
    # ------------------------------------------------------------------------------------------
    def list_knowledge_bases(self) -> list[dict[str, Any]]:
        """`[{"name", "version", "templates", "rules", ..., "files"}]`; a file that does not validate
        is listed with `"errors": [diagnostics]`."""
        out = []
        for name in self.library.names():
            try:
                out.append(self.library.describe(self.library.load(name)))
            except Exception as exc:
                out.append({"name": name, "errors": [str(d) for d in getattr(exc, "diagnostics", [exc])]})
        return out

    def get_knowledge_base(self, name: str) -> Any:
        """The validated `rules.KnowledgeBase` (`.name .version .sources .templates .rules`).

        Raises KnowledgeBaseNotFoundError, KnowledgeBaseError."""
        return self.library.load(name)

    def upload_knowledge_base(self, name: str, text: str) -> Any:
        """Validate rule text and write it as `knowledge_bases/NAME.clp`; records the version in the store.

        Raises KnowledgeBaseError with `file:line:col` diagnostics (nothing is written)."""
        kb, path = self.library.save(name, text)
        self.store.save_knowledge_base(kb.name, kb.version, kb.sources)
        return kb

    def run_knowledge_base(
        self,
        name: str,
        facts: Iterable[Any] | None = None,
        *,
        strategy: str | None = None,
        max_firings: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Forward chaining: reset, assert `facts` (`Fact`s or `{"template", "slots"|"values"}`), run.

        Returns `chaining.forward.ForwardResult` (`.to_dict()` for JSON). Raises KnowledgeBaseNotFoundError,
        KnowledgeBaseError, rules.facts.FactError, chaining.forward.ForwardError."""
        kb = self.library.load(name)
        return self.library.engine(kb).evaluate(facts, strategy=strategy, max_firings=max_firings, timeout=timeout)

    def ask(
        self,
        name: str,
        goal: str,
        facts: Iterable[Any] | None = None,
        *,
        all: bool = False,
        max_answers: int | None = None,
        max_depth: int | None = None,
        timeout: float | None = None,
        provider: Any = None,
    ) -> dict[str, Any]:
        """Blocking `ask_async` (scripts, threads, Textual workers; from a coroutine await `ask_async`)."""
        return self._sync(
            self.ask_async(
                name,
                goal,
                facts,
                all=all,
                max_answers=max_answers,
                max_depth=max_depth,
                timeout=timeout,
                provider=provider,
            )
        )

    async def ask_async(
        self,
        name: str,
        goal: str,
        facts: Iterable[Any] | None = None,
        *,
        all: bool = False,
        max_answers: int | None = None,
        max_depth: int | None = None,
        timeout: float | None = None,
        provider: Any = None,
    ) -> dict[str, Any]:
        """Backward chaining: prove `goal` (e.g. `"(ancestor ?x otto)"`) over knowledge base `name`.

        Args:
            facts: working-memory facts (`Fact`s or `{"template", "slots"|"values"}`).
            all: every answer (default: the first; `max_answers` caps either).
            provider: answers askable facts (`chaining.backward.PersonProvider`, `ScriptedProvider`, ...).
        Returns:
            `{"proved", "answers": [{"bindings", "fact", "certainty", "proof"}], "skipped_rules": [{"rule", "reason"}]}`.
        Raises:
            KnowledgeBaseNotFoundError, KnowledgeBaseError, chaining.backward.BackwardError (GoalSyntaxError, ...).
        """
        from chaining.forward import as_facts
        from workbench.pipeline.nodes.backward import prove

        kb = self.library.load(name)
        limit = max_answers if all else (max_answers or 1)
        answers, _, skipped = await prove(
            kb,
            goal,
            as_facts(facts),
            limit=limit,
            max_depth=max_depth,
            timeout=timeout,
            functions=self.library.functions,
            provider=provider,
        )
        return {"proved": bool(answers), "answers": answers, "skipped_rules": skipped}

    def check_knowledge_base(self, sources: list[tuple[str, str]]) -> list[Any]:
        """Located diagnostics (`rules.Diagnostic`: file, line, column, message) for unsaved rule text
        given as `[(filename, text), ...]` in load order; empty when it validates. Never raises on bad text."""
        import rules

        return rules.check_sources(
            list(sources), allow_unsafe=self.library.allow_unsafe, functions=self.library.functions
        )

    # ------------------------------------------------------------------------------------------
    # models
    # ------------------------------------------------------------------------------------------
    def list_models(self) -> list[dict[str, Any]]:
        """Catalogue and registered models: loaded ones with `info()` (version, device, signature,
        batcher), others with their catalogue entry."""
        out = []
        specs = self.catalog.specs()
        for name in self.catalog.names():
            if self.catalog.is_loaded(name):
                info = self.catalog.get(name).info()
                info["loaded"] = True
            else:
                s = specs[name]
                info = {"name": name, "format": s.format, "task": s.task, "source": str(s.path), "loaded": False}
            out.append(info)
        return out

    def get_model(self, name: str) -> Any:
        """The loaded `neural.entry.ModelEntry` (loading it on first use). Raises ModelNotFoundError."""
        return self.catalog.get(name)

    def register_model(self, name: str, module: Any, **kwargs: Any) -> Any:
        """Register an `nn.Module` (kwargs as `neural.loaders.load_module`: `signature=` or
        `example_inputs=`, `task=`, `batcher_config=`, ...). Returns the ModelEntry."""
        return self.catalog.register_module(name, module, **kwargs)

    def register_model_entry(self, entry: Any) -> Any:
        """Register an already loaded `ModelEntry` (e.g. from `neural.loaders.load_onnx`)."""
        return self.catalog.register(entry)

    def unload_model(self, name: str) -> bool:
        """Drain and stop a loaded model's batcher and release it (it loads again on next use).
        Returns False when it was not loaded."""
        return self.catalog.unload(name)

    def load_models(self, names: list[str] | None = None) -> list[str]:
        """Load catalogue models now (default: all) so that `ready` becomes True; returns names loaded."""
        self._required_models = list(names) if names is not None else list(self.catalog.specs())
        return self.catalog.load_all(self._required_models)

    @property
    def ready(self) -> bool:
        """True once the models asked for by `load_models` (default: every catalogue entry) are loaded."""
        required = self._required_models if self._required_models is not None else list(self.catalog.specs())
        return all(self.catalog.is_loaded(n) for n in required)

    async def infer(self, name: str, item: Any, *, timeout_s: float | None = None) -> Any:
        """One request through the model's dynamic batcher (tensor models: `{input: array}`; text: a string).

        Raises ModelNotFoundError, neural.errors.InputValidationError, QueueFullError, RequestTimeoutError."""
        return await self.catalog.get(name).infer(item, timeout_s=timeout_s)

    def _model_loaded(self, entry: Any) -> None:
        sig = entry.signature.to_dict() if getattr(entry, "signature", None) is not None else {}
        try:
            self.store.save_model(entry.name, entry.version, entry.format, entry.task, sig)
        except Exception:  # recording the model row must never prevent serving it
            import logging

            logging.getLogger("workbench").exception("could not record model %s", entry.name)

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


__all__ = ["KnowledgeBaseNotFoundError", "PipelineInfo", "Workbench"]
