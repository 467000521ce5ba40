"""Runs of the `Workbench` facade: run, stream, run_many, recorded runs and their traces, replay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.pipeline.errors import (
    AmbiguousRunIdError,
    KnowledgeBaseError,
    KnowledgeBaseNotFoundError,
    PipelineValidationError,
    RunFailedError,
    RunNotFoundError,
)
from workbench.pipeline.executor import Executor, Runtime
from workbench.pipeline.knowledge import KnowledgeBaseLibrary
from workbench.pipeline.recorder import RunRecorder
from workbench.pipeline.replay import ReplayResult, diff_runs
from workbench.pipeline.result import RunResult
from workbench.pipeline.spec import Pipeline
from workbench.store import Store


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

    def run_summaries(self, *args: Any, **kwargs: Any) -> Any:
        self._recorder.flush()
        return self._store.run_summaries(*args, **kwargs)

    def cached_run(self, *args: Any, **kwargs: Any) -> Any:
        self._recorder.flush()
        return self._store.cached_run(*args, **kwargs)


class RunsMixin:
    """Runs: one input (or its event stream), many inputs, recorded runs, replays."""

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
        listener: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> RunResult:
        """Run a pipeline (a name, resolved as `get_pipeline`, or a `Pipeline`) on one input.

        `listener(kind, node_id, payload)` sees the run as it goes (see `stream`).

        The pipeline version is stored (if new) before the run so every recorded run points at
        its document. Returns a `RunResult` (status "failed" names the node unless
        `raise_on_error`, which raises RunFailedError).

        Raises:
            PipelineNotFoundError, PipelineValidationError, InputValidationError (bad input: node
            and JSON path), neural.errors.QueueFullError (retry later), RunFailedError.
        """
        p = await self._resolve(pipeline, version)
        if validate:
            await self._ensure_valid(p)
        result = await self.executor.run(
            p, inputs, explain=explain, record=record, base_dir=self._base_dir(p), listener=listener
        )
        if raise_on_error and not result.ok:
            raise RunFailedError(result)
        return result

    async def stream(
        self, pipeline: Pipeline | str, inputs: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """Run a pipeline on one input, yielding events as they happen (arguments as `run`):

        `{"event": "node", "node", "type", "status", "seconds"}` when a node finishes (`"error"` too when
        it failed);
        `{"event": "text", "node", "delta"}` (or `"text"`: a rail replaced all shown text) as a
        generate node releases checked text; `{"event": "rail", "node", "action", "text", "reason",
        "tokens"}` for each rail verdict; last `{"event": "result", "run": RunResult.to_dict()}`.
        Leaving early cancels the run (a generate node's request is aborted, its KV blocks freed).
        Raises what `run` raises, before the first event.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def listener(kind: str, node: str, payload: dict[str, Any]) -> None:  # any thread
            loop.call_soon_threadsafe(queue.put_nowait, {"event": kind, "node": node, **payload})

        task = asyncio.ensure_future(self.run(pipeline, inputs, listener=listener, **kwargs))
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                yield item
            result = task.result()  # raises the run's exception
            yield {"event": "result", "run": result.to_dict()}
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _ensure_valid(self, p: Pipeline) -> None:
        """Validate a pipeline version not run before and store it, on a worker thread: the validation, the
        YAML and the store's write (which can wait for a shared SQLite file) never run on the event loop.
        Raises PipelineValidationError."""
        key = p.version
        if key in self._valid:
            return

        def validate_and_store() -> None:
            issues = self.validate(p)
            if issues:
                raise PipelineValidationError(issues)
            self.store.save_pipeline(p.name, key, p.to_yaml())

        await asyncio.to_thread(validate_and_store)
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
        p = await self._resolve(pipeline, version)
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
            raise self._not_found(run_id)
        return RunResult.from_row(row)

    def _not_found(self, run_id: str) -> RunNotFoundError:
        """RunNotFoundError, or AmbiguousRunIdError when 2+ runs share the prefix `run_id`."""
        matches = self.store.run_ids_with_prefix(run_id) if len(run_id) >= 4 else []
        return AmbiguousRunIdError(run_id, matches) if len(matches) > 1 else RunNotFoundError(run_id)

    def get_trace(self, run_id: str) -> list[dict[str, Any]]:
        """The trace events of a run, in order: `{"seq", "kind", "node", "at", "payload"}`. Raises RunNotFoundError."""
        row = self.store.get_run(run_id)
        if row is None:
            raise self._not_found(run_id)
        return [_trace_event(e.seq, e, e.payload) for e in row.events]

    async def replay(
        self,
        run_id: str,
        *,
        knowledge_bases: Mapping[str, str | Path] | None = None,
        record: bool = True,
        regenerate: bool = False,
    ) -> ReplayResult:
        """Re-run a recorded run on the same pipeline version, optionally with edited knowledge bases.

        Args:
            knowledge_bases: `{name: path to a .clp file, or rule text}` replacing the knowledge
                base of that name for this replay only.
            regenerate: generate nodes decode again with the recorded seed; by default they
                re-check the recorded text with their (possibly edited) rails, without the model.
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
            used = sorted(
                {kb_name for node in p.nodes.values() for kb_name in node.knowledge_bases}
                | {node.get("rails")["knowledge_base"] for node in p.nodes_of("generate") if node.get("rails")}
            )
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
                max_engines=self.library.max_engines,
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
                recorded={g["node"]: g for g in (original.explanation or {}).get("generations", [])},
                regenerate=regenerate,
            )
        finally:
            if library is not self.library:
                library.close()
        old_trace = self.get_trace(original.run_id) if original.run_id else []
        new_trace = self.get_trace(new.run_id) if new.run_id else _as_stored(new.trace or [])
        return ReplayResult(original, new, diff_runs(original, new, old_trace, new_trace))


def _as_stored(events: list[Any]) -> list[dict[str, Any]]:
    """Trace events of an unrecorded run as `get_trace` reads a recorded run's: `{"seq", "kind", "node", "at",
    "payload"}` with the payload through the store's JSON (tuples as lists, non-finite floats as strings), so
    that a replay's diff compares like with like."""
    import json

    from workbench.store.database import json_text

    return [_trace_event(i, e, json.loads(json_text(e.payload))) for i, e in enumerate(events)]


def _trace_event(seq: int, event: Any, payload: Any) -> dict[str, Any]:
    """One trace event as `get_trace` answers it: `{"seq", "kind", "node", "at", "payload"}`; `event` a stored
    event row or a run's in-memory event (both have `kind`, `node`, `at`)."""
    return {"seq": seq, "kind": event.kind, "node": event.node, "at": event.at, "payload": payload}
