"""Pipelines, recorded runs and knowledge bases over the `Workbench` facade.

Blocking facade calls run in worker threads; their errors become `ServingError`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rules.facts import to_json
from workbench.pipeline.handoff import START_BY, StartDeadlineError

from .admission import AdmissionQueue, with_deadline
from .errors import (
    BadInputError,
    InvalidDocumentError,
    NotFoundError,
    OverloadedError,
    UnavailableError,
    acall,
    call,
    code_of,
    translate,
)

log = logging.getLogger("workbench.serving")


class LibraryServing:
    """Mixin of `Serving`: pipelines, runs and knowledge bases. Uses the host's `workbench` and
    `require_ready()`."""

    def _wb(self, wait_for_models: bool = True) -> Any:
        """The workbench; UnavailableError while start-up loading runs unless `wait_for_models` is
        False (knowledge-base reads, uploads and forward runs use no model)."""
        if wait_for_models:
            self.require_ready()
        if self.workbench is None:
            raise UnavailableError("no workbench is configured on this server", 30.0)
        return self.workbench

    async def list_pipelines(self) -> list[dict[str, Any]]:
        """`[{"name", "versions", "stages", "latest", "file", "description"}]`."""
        wb = self._wb()
        return [p.to_dict() for p in await call(wb.list_pipelines)]

    async def get_pipeline(self, name: str, version: str | None = None) -> dict[str, Any]:
        """`{"name", "version", "description", "document" (YAML text), "versions": [...], "stages"}`."""
        wb = self._wb()
        p = await call(wb.get_pipeline, name, version)
        try:
            versions = await call(wb.pipeline_versions, name)
        except NotFoundError:
            versions = []
        stages = await asyncio.to_thread(wb.store.stages, name)
        return {
            "name": p.name,
            "version": p.version,
            "description": p.description,
            "document": p.to_yaml(),
            "versions": versions,
            "stages": stages,
        }

    async def put_pipeline(self, name: str, document: str, stage: str | None = None) -> dict[str, Any]:
        """Validate and store a pipeline version (YAML text); the document's `name` must be `name`.

        Returns `{"name", "version", "created"}` (`created` False when that exact version was
        already stored). Raises InvalidDocumentError (issues with node, field, line and column).
        """
        wb = self._wb()
        from workbench.pipeline.spec import Pipeline

        _refuse_surrogate_escapes(document)
        p = await call(Pipeline.from_yaml, document)
        if p.name != name:
            raise InvalidDocumentError(
                f"the document's name is {p.name!r} but the URL names {name!r}",
                param="name",
                details=[{"field": "name", "message": f"expected {name!r}, got {p.name!r}"}],
            )
        version, created = await call(wb.put_pipeline, p, stage=stage)  # the store says which call stored it
        return {"name": name, "version": version, "created": created}

    async def delete_pipeline(self, name: str) -> int:
        """Delete every stored version of `name` (recorded runs are kept); returns how many."""
        return await call(self._wb().delete_pipeline, name)

    async def promote(self, name: str, version: str, stage: str) -> str:
        """Point `stage` at a stored version; returns the full version."""
        return await call(self._wb().promote, name, version, stage)

    def _admission(self) -> AdmissionQueue:
        q = getattr(self, "_admission_queue", None)
        if q is None:
            q = self._admission_queue = AdmissionQueue(
                self.settings.serving.pipeline_max_queue, max_wait_s=self.settings.serving.pipeline_max_wait_s
            )
        return q

    @contextlib.contextmanager
    def _admitted(self, name: str, n: int = 1) -> Iterator[Any]:
        """Hold `n` admission slots of pipeline `name` (OverloadedError when they are not free). When
        the pipeline turns out not to exist, the slots are discarded (`AdmissionQueue.discard`):
        admission is taken before the pipeline is looked up, and made-up names must leave no state."""
        queue = self._admission()
        ticket = queue.admit(name, n)
        try:
            yield ticket
        except NotFoundError as exc:
            if _no_such_pipeline(exc):
                queue.discard(ticket)
            raise
        except (BadInputError, InvalidDocumentError, OverloadedError):
            ticket.release(counted=False)  # refused before any run: not a service time
            raise
        finally:
            ticket.release()  # nothing when discarded

    def _deadline(self, timeout_s: float | None) -> float:
        return self.settings.serving.predict_timeout_s if timeout_s is None else timeout_s

    async def predict(
        self,
        name: str,
        inputs: dict[str, Any],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Run a pipeline on one input; returns the run as a dict (`RunResult.to_dict()`).

        Admission: at most `settings.serving.pipeline_max_queue` requests per pipeline at once;
        the run is cancelled when `timeout_s` (default `settings.serving.predict_timeout_s`)
        passes, or when the awaiting task is cancelled (the client left): steps not started and
        queued model requests are dropped.

        A run that fails inside a node is returned with `status: "failed"` and the node named.
        Raises NotFoundError, BadInputError (input does not match the schema: node and JSON
        path), InvalidDocumentError, OverloadedError (the pipeline's admission limit or a model
        queue is full; nothing ran), DeadlineError (timeout_s passed; the run was cancelled).
        """
        wb = self._wb()
        max_wait = self.settings.serving.pipeline_max_wait_s
        with self._admitted(name) as ticket:
            # Triton's queue policy (timeout_action REJECT): an admitted run that no worker has
            # started within pipeline_max_wait_s is answered 429 and never started (docs/serving.md)
            token = START_BY.set(None if max_wait is None else ticket.admitted_at + max_wait)
            try:
                result = await with_deadline(
                    acall(self._run_or_refuse(wb, name, inputs, version, explain)),
                    self._deadline(timeout_s),
                    f"pipeline {name!r}",
                )
            finally:
                START_BY.reset(token)
        return result.to_dict()

    async def _run_or_refuse(self, wb: Any, name: str, inputs: Any, version: str | None, explain: bool) -> Any:
        """`wb.run(...)`; a run not started by its START_BY instant raises OverloadedError (429)."""
        try:
            return await wb.run(name, inputs, version=version, explain=explain)
        except StartDeadlineError as exc:
            wait = self.settings.serving.pipeline_max_wait_s or 0.0
            raise OverloadedError(
                f"pipeline {name!r}: no worker started the run within serving.pipeline_max_wait_s={wait:g} s "
                f"of its admission ({exc.late_s:.2f} s late); it was not run; retry later",
                self._admission().retry_after_s(name),
            ) from None

    async def predict_stream(
        self, name: str, inputs: dict[str, Any], *, version: str | None = None, explain: bool = False
    ) -> Any:
        """`predict` as an async iterator of events (`Workbench.stream`), the last `{"event": "result",
        "run": {...}}`. Raises (on the first `__anext__`) what `predict` raises; the stream holds one of
        the pipeline's admission slots until it ends (OverloadedError when none is free)."""
        wb = self._wb()
        with self._admitted(name):
            events = wb.stream(name, inputs, version=version, explain=explain)

            async def step() -> Any:
                try:
                    return await events.__anext__()
                except StopAsyncIteration:
                    return None

            try:
                while (event := await acall(step())) is not None:
                    yield to_json(event)
            finally:
                await events.aclose()

    async def predict_many(
        self,
        name: str,
        inputs: list[dict[str, Any]],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> list[dict[str, Any]]:
        """Run a pipeline on many inputs at once (their model calls batch together).

        Returns one item per input, in order: the run's dict, or `{"error": {code, message,
        param}}` for an input that was refused (bad input, full queue), so one bad input loses
        nothing else. Raises NotFoundError, InvalidDocumentError for the pipeline itself.
        """
        wb = self._wb()
        with self._admitted(name, len(inputs)):
            items = await with_deadline(
                acall(wb.run_many(name, inputs, version=version, explain=explain)),
                self._deadline(timeout_s),
                f"pipeline {name!r}",
            )
        out = []
        for item in items:
            if isinstance(item, BaseException):
                err = translate(item)
                out.append({"error": {"code": code_of(err), "message": err.message, "param": err.param}})
            else:
                out.append(item.to_dict())
        return out

    async def get_run(self, run_id: str) -> dict[str, Any]:
        """A recorded run with its trace: `RunResult.to_dict()` plus `"trace": [events]`."""
        wb = self._wb()
        run = await call(wb.get_run, run_id)
        doc = run.to_dict()
        doc["trace"] = await call(wb.get_trace, run.run_id)
        return doc

    async def list_runs(self, pipeline: str | None, status: str | None, limit: int) -> list[dict[str, Any]]:
        """Recorded runs, newest first."""
        wb = self._wb()
        return [r.to_dict() for r in await call(wb.list_runs, pipeline, status, None, limit)]

    async def run_summaries(
        self, pipeline: str | None, status: str | None, limit: int, before: Any = None
    ) -> list[dict[str, Any]]:
        """One page of run summaries, newest first (`Store.run_summaries`: no inputs or outputs)."""
        wb = self._wb()
        rows = await call(wb.store.run_summaries, pipeline, status, limit, before)
        return rows

    # ---- knowledge bases ---------------------------------------------------------------------
    async def list_knowledge_bases(self) -> list[dict[str, Any]]:
        """`[{"name", "version", "templates", "rules", "files", ...}]` (invalid files with `errors`)."""
        return await call(self._wb(wait_for_models=False).list_knowledge_bases)

    async def get_knowledge_base(self, name: str) -> dict[str, Any]:
        """Summary plus `sources`: `[{"file", "text", "format"}]`, each file as its own source: `format`
        "clips" for rule text, "csv" for a decision table (`text`: its CSV; an `.xlsx` table's first
        worksheet written as CSV) with `rules`, the CLIPS text generated from its rows."""
        wb = self._wb(wait_for_models=False)
        kb = await call(wb.get_knowledge_base, name)
        doc = dict(wb.library.describe(kb))
        doc["sources"] = await call(lambda: [_source_doc(wb.library.relative(f), f, t) for f, t in kb.sources])
        return doc

    async def upload_knowledge_base(self, name: str, text: str) -> dict[str, Any]:
        """Validate rule text and save it as knowledge base `name`; returns its summary and whether
        it was new. Raises InvalidDocumentError with `file:line:col` details (nothing written)."""
        wb = self._wb(wait_for_models=False)
        existed = name in await asyncio.to_thread(wb.library.names)
        kb = await call(wb.upload_knowledge_base, name, text)
        return {**wb.library.describe(kb), "created": not existed}

    async def run_knowledge_base(
        self, name: str, facts: list[Any], *, strategy: str | None, max_firings: int | None, timeout_s: float | None
    ) -> dict[str, Any]:
        """Forward chaining: facts in, `ForwardResult.to_dict()` out (working memory, firings, output).
        Cancelling the awaiting task (its client left) halts the evaluation in its worker thread too,
        instead of leaving it to run to its time limit; the halt is logged when the evaluation stops."""
        from chaining.forward import Cancellation

        wb = self._wb(wait_for_models=False)
        cancel = Cancellation()
        try:
            result = await call(
                _run_knowledge_base,
                wb,
                name,
                facts,
                strategy=strategy,
                max_firings=max_firings,
                timeout=timeout_s,
                cancel=cancel,
            )
        except asyncio.CancelledError:
            cancel.cancel()
            raise
        return result.to_dict()

    async def ask(
        self,
        name: str,
        goal: str,
        facts: list[Any],
        *,
        all: bool,
        max_answers: int | None,
        max_depth: int | None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Backward chaining: `{"proved", "answers": [{"bindings", "certainty", "proof"}], "skipped_rules"}`.
        `timeout_s`: the proof's time limit (None: the prover's default, 30 s), DeadlineError past it.
        Cancelling the awaiting task (its client left) stops the proof in its worker thread too
        (`chaining.forward.Cancellation`, checked between resolution steps), instead of leaving it to
        run to its time limit; the stop is logged with the proof's seconds and steps."""
        from chaining.forward import Cancellation

        wb = self._wb()
        kwargs = dict(all=all, max_answers=max_answers, max_depth=max_depth, timeout=timeout_s)
        if inspect.iscoroutinefunction(wb.ask):
            return to_json(await acall(wb.ask(name, goal, facts, **kwargs)))
        cancel = Cancellation()
        try:
            return to_json(await call(_ask, wb, name, goal, facts, cancel=cancel, **kwargs))
        except asyncio.CancelledError:
            cancel.cancel()
            raise


def _run_knowledge_base(wb: Any, name: str, facts: list[Any], **kwargs: Any) -> Any:
    """`wb.run_knowledge_base` in a worker thread; an evaluation its caller cancelled is logged when it stops."""
    from chaining.forward import EvaluationCancelled

    try:
        return wb.run_knowledge_base(name, facts, **kwargs)
    except EvaluationCancelled as exc:
        log.info("knowledge base %r: %s", name, exc)
        raise


def _ask(wb: Any, name: str, goal: str, facts: list[Any], **kwargs: Any) -> Any:
    """`wb.ask` in a worker thread; a proof its caller cancelled is logged when it stops."""
    from chaining.backward import ProofCancelled

    try:
        return wb.ask(name, goal, facts, **kwargs)
    except ProofCancelled as exc:
        log.info("knowledge base %r: %s", name, exc)
        raise


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _refuse_surrogate_escapes(document: str) -> None:
    """YAML decodes `"\\ud903"` to a lone surrogate, which no UTF-8 text can hold (the stored document
    could not be written back): refuse it with its line and column. A pair is refused too, as YAML
    (unlike JSON) does not join the halves of a pair into one character."""
    m = _SURROGATE_ESCAPE.search(document)
    if m is None:
        return
    line = document.count("\n", 0, m.start()) + 1
    col = m.start() - (document.rfind("\n", 0, m.start()) + 1) + 1
    message = (
        f"line {line}, column {col}: the escape {m.group()} is a surrogate, not a character; write the character itself"
    )
    raise InvalidDocumentError(
        message, param="document", details=[{"field": "document", "line": line, "column": col, "message": message}]
    )


def _no_such_pipeline(exc: NotFoundError) -> bool:
    """Whether `exc` says the pipeline (or the asked version of it) does not exist."""
    from workbench.pipeline.errors import PipelineNotFoundError

    return isinstance(exc.__cause__, PipelineNotFoundError)


def source_format(file: str) -> str:
    """How a knowledge-base file's text reads by its name: "csv" for a decision table, else "clips"."""
    from rules.decision_table import is_table

    return "csv" if is_table(file) else "clips"


def _source_doc(shown: str, path: str, text: str) -> dict[str, Any]:
    """One entry of `sources`: a .clp file's text, or a decision table's own cells as CSV with `rules`
    (its generated CLIPS text, `text` as loaded)."""
    if source_format(path) == "clips":
        return {"file": shown, "text": text, "format": "clips"}
    import csv
    import io

    from rules.decision_table import read_rows

    if str(path).lower().endswith(".csv"):
        table = Path(path).read_bytes().decode("utf-8-sig", errors="replace")
    else:  # .xlsx: its first worksheet's cells, as the table reads them
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(read_rows(path))
        table = out.getvalue()
    return {"file": shown, "text": table, "format": "csv", "rules": text}
