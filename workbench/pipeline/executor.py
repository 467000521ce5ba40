"""The asyncio executor: runs a pipeline on one input, records the run and its trace.

Nodes run in topological generations; the nodes of one generation run concurrently. A node is
skipped when its incoming edges are inactive (see docs/pipelines.md, "Gates and skipping"),
so a model behind a closed gate never reaches its batcher. Many runs may be in flight at once
on one event loop: their model nodes submit to the same per-model batchers and are batched
together. A failing node fails only its own run, which is recorded with the error naming the
node; `neural.errors.QueueFullError` (back-pressure) and `ModelUnloadedError` (a model node's or a
goal node's model was unloaded on request) are re-raised unchanged: refused, nothing recorded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from neural import errors as neural_errors
from workbench.store import RunRow, Store, TraceEvent
from workbench.store.models import utcnow

from . import metrics
from .catalog import ModelCatalog
from .context import FAILED, SKIPPED, SUCCEEDED, Plan, RunContext
from .errors import InputValidationError, ModelInputError, ModelUnloadedError, NodeExecutionError, RunCancelled
from .explanation import assemble
from .handoff import RunPool, run_steps
from .knowledge import KnowledgeBaseLibrary
from .nodes import HANDLERS
from .nodes.model import ModelCall
from .recorder import RunRecorder
from .result import Explanation, RunResult
from .spec import Pipeline
from .steps import StepRun, check_input

log = logging.getLogger("workbench.pipeline")


@dataclass(slots=True)
class Runtime:
    """What node handlers use: knowledge bases, models, where runs are recorded, and the worker
    pool that runs the CPU-bound steps of runs (None: one shared pool, see `default_pool`)."""

    library: KnowledgeBaseLibrary
    catalog: ModelCatalog
    store: Store | None = None
    recorder: RunRecorder | None = None
    durable: bool = False  # True: a run returns only after its record is committed; False: write-behind
    pool: concurrent.futures.Executor | None = None

    def worker_pool(self) -> concurrent.futures.Executor:
        return self.pool if self.pool is not None else default_pool()


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def default_workers() -> int:
    """Threads of the shared run pool: 4 per core, at least 8 (a rules evaluation that runs to its
    time limit holds a thread; the GIL, not the thread count, bounds the CPU used; docs/serving.md)."""
    return max(8, 4 * (os.cpu_count() or 1))


def default_pool() -> RunPool:
    """The process-wide pool that runs the CPU-bound steps of pipeline runs (created on first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = RunPool(default_workers(), thread_name_prefix="workbench-run")
        return _POOL


def _threaded(calls: list[Any]) -> list[Any] | None:
    """The requests of a step's calls that threads wait for (model calls without a deadline), or
    None when the loop awaits the calls; their held model requests are released to the batchers then."""
    if all(isinstance(c, ModelCall) and c.request.deadline is None for c in calls):
        return [c.request for c in calls]
    for c in calls:
        if isinstance(c, ModelCall):
            c.request.dispatch()
    return None


def _count_failure(fut: Any) -> None:
    if fut.exception() is not None:
        metrics.RECORD_FAILURES.inc()


class Executor:
    """Runs pipelines with a `Runtime`. Safe to use from many tasks of one event loop."""

    def __init__(self, runtime: Runtime):
        self.rt = runtime
        self._plans: dict[str, Plan] = {}
        self._running = 0  # runs in `run` now (changed on every caller's event loop, read by pool threads)
        self._running_lock = threading.Lock()  # callers on several loops (threads) count at once

    def _plan(self, pipeline: Pipeline) -> Plan:
        key = pipeline.fingerprint()
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 256:
                self._plans.clear()
            plan = self._plans[key] = Plan.build(pipeline)
        return plan

    async def run(
        self,
        pipeline: Pipeline,
        inputs: dict[str, Any],
        *,
        explain: bool = False,
        record: bool = True,
        base_dir: str | None = None,
        replay_of: str | None = None,
        use_cache: bool | None = None,
        recorded: dict[str, Any] | None = None,
        regenerate: bool = False,
        listener: Any = None,
    ) -> RunResult:
        """Run `pipeline` on one input.

        The CPU-bound parts (schema checks, fact mappings, expressions, rules, explanation, the
        record) run on the runtime's worker pool (`Runtime.pool`), never on the calling event
        loop; only the wait for model results happens on the loop. A run is a few steps on the
        pool: everything up to the next model calls, then (after their results) everything up
        to the next ones, and so on. Cancelling the awaiting task (a deadline, a client that
        left) drops the steps not started yet and cancels queued model requests, so abandoned
        work never reaches a model or a knowledge base.

        Args:
            inputs: the run input (a JSON object), checked against the input node's schema.
            explain: return the explanation with the result (it is recorded either way).
            record: write the run and its trace to the store (one transaction).
            base_dir: folder that relative knowledge-base paths are resolved against.
            replay_of: id of the run this one replays (recorded).
            use_cache: None: the pipeline's `cache` setting; False: never read the result cache.
            recorded: replays: `{generate node id: its recorded generation}`; those nodes re-check
                the recorded text with their rails instead of calling the model, unless `regenerate`
                (decode again with the recorded seed).
            listener: called as `listener(kind, node_id, payload)` while the run goes (streaming:
                "node" when a node finishes, "text" for generated text, "rail" for rail verdicts).

        Returns:
            RunResult: status "succeeded" or "failed" (the error names the node).

        Raises:
            InputValidationError: the input does not match the input node's schema, or a model node's
                input cannot be converted to the model's dtype and shape (nothing recorded).
            neural.errors.QueueFullError: a model's queue is full (nothing recorded; retry later).
            ModelUnloadedError: a model node or a goal node's `;@model` relation needs a model that was
                unloaded on request (naming pipeline, node and model; nothing recorded).
        """
        with self._running_lock:
            self._running += 1
        try:
            return await self._run(
                pipeline, inputs, explain, record, base_dir, replay_of, use_cache, recorded, regenerate, listener
            )
        finally:
            with self._running_lock:
                self._running -= 1

    async def _run(
        self,
        pipeline: Pipeline,
        inputs: dict[str, Any],
        explain: bool,
        record: bool,
        base_dir: str | None,
        replay_of: str | None,
        use_cache: bool | None,
        recorded: dict[str, Any] | None,
        regenerate: bool,
        listener: Any,
    ) -> RunResult:
        started = utcnow()
        t0 = time.perf_counter()
        plan = self._plan(pipeline)
        cacheable = pipeline.cache if use_cache is None else (use_cache and pipeline.cache)
        ihash: str | None = None
        if cacheable and self.rt.store is not None:
            ihash = await self._offload(check_input, pipeline, inputs)
            if self.rt.recorder is not None:
                await self.rt.recorder.aflush()  # see our own earlier runs
            hit = await self._offload(self.rt.store.cached_run, plan.version, ihash)
            if hit is not None:
                return await self._cache_hit(pipeline, plan.version, inputs, ihash, hit, started, t0, record, explain)
        step = StepRun(self, pipeline, plan, inputs, ihash, base_dir, explain, record, replay_of, started, t0)
        step.extras = (recorded or {}, regenerate, listener)
        outcomes: list[Any] | None = None
        try:
            while True:
                # threads carry the run from step to step (handoff.py); the loop wakes when it is
                # committed, or when its next calls must be awaited here (a deadline, a generation)
                calls, committed = await run_steps(
                    self.rt.worker_pool(), step.advance, outcomes, _threaded, lambda: step.pending
                )
                if not calls:
                    break
                try:
                    outcomes = await asyncio.gather(*(c.wait() for c in calls), return_exceptions=True)
                except asyncio.CancelledError:
                    for c in calls:
                        c.request.cancel()
                    raise
        except asyncio.CancelledError:
            step.cancel.cancel()  # a step running now stops in its rules evaluation or proof (RunCancelled)
            raise
        assert step.result is not None
        if step.pending is not None:  # durable: committed before `run_steps` returned
            step.result.run_id = committed
        return step.result

    async def _offload(self, fn: Any, *args: Any) -> Any:
        """`fn(*args)` on the worker pool; cancelling the caller before it starts means it never runs."""
        return await asyncio.get_running_loop().run_in_executor(self.rt.worker_pool(), fn, *args)

    def _skip_reason(self, ctx: RunContext, nid: str) -> str | None:
        incoming = ctx.incoming(nid)
        if not incoming:
            return None
        active = [ctx.active(e) for e in incoming]
        node = ctx.pipeline.nodes[nid]
        if (node.join == "all" and all(active)) or (node.join == "any" and any(active)):
            return None
        for e, a in zip(incoming, active):
            if not a:
                src = ctx.states[e.source]
                if src.status == SUCCEEDED and e.when is not None:
                    selected = ", ".join(sorted(src.branches or [])) or "none"
                    return f"gate {e.source!r} did not select branch {e.when!r} (selected: {selected})"
                return f"upstream node {e.source!r} was {src.status}"
        return "no active incoming edge"

    def _run_node(self, ctx: RunContext, nid: str) -> NodeExecutionError | None:
        """Run one node that is not a model node (on a pool thread); returns its error, if any."""
        st = ctx.states[nid]
        t = time.perf_counter()
        try:
            HANDLERS[st.node.type](ctx, st, self.rt)
        except NodeExecutionError as exc:
            err = exc if exc.node == nid else NodeExecutionError(nid, st.node.type, str(exc))
            return self._failed(ctx, st, t, err)
        except InputValidationError as exc:
            return self._failed(ctx, st, t, NodeExecutionError(nid, st.node.type, str(exc)))
        except (neural_errors.QueueFullError, ModelUnloadedError):  # refused, not failed: nothing recorded
            raise
        except RunCancelled as exc:  # the caller left while the node ran: stopped, nothing recorded
            log.info("pipeline %r: run cancelled by its caller: %s", ctx.pipeline.name, exc)
            raise
        except neural_errors.InputValidationError as exc:
            # a value that cannot become the model's dtype or shape is bad input: refused, nothing recorded
            raise ModelInputError(nid, f"inputs.{exc.input_name}", str(exc)) from exc
        except Exception as exc:
            return self._failed(ctx, st, t, NodeExecutionError(nid, st.node.type, f"{type(exc).__name__}: {exc}"))
        return self._succeeded(ctx, st, t)

    @staticmethod
    def _succeeded(ctx: RunContext, st: Any, t: float) -> None:
        st.seconds = time.perf_counter() - t
        st.status = SUCCEEDED
        metrics.child(metrics.NODE_LATENCY, ctx.pipeline.name, st.node.type).observe(st.seconds)
        if ctx.listener is not None:
            payload = {"type": st.node.type, "status": SUCCEEDED, "seconds": round(st.seconds, 6)}
            ctx.listener("node", st.node.id, payload)
        return None

    @staticmethod
    def _failed(ctx: RunContext, st: Any, t: float, err: NodeExecutionError) -> NodeExecutionError:
        st.seconds = time.perf_counter() - t
        st.status, st.reason = FAILED, str(err)
        ctx.event("node", st.node.id, {"type": st.node.type, "status": "failed", "error": str(err)})
        if ctx.listener is not None:  # a stream shows the failing node as it shows every finished one
            payload = {"type": st.node.type, "status": FAILED, "seconds": round(st.seconds, 6), "error": str(err)}
            ctx.listener("node", st.node.id, payload)
        return err

    def _finish(
        self,
        ctx: RunContext,
        pipeline: Pipeline,
        version: str,
        inputs: dict[str, Any],
        ihash: str,
        failure: NodeExecutionError | None,
        started: Any,
        duration: float,
        explain: bool,
        record: bool,
        replay_of: str | None,
    ) -> tuple[RunResult, Any]:
        """Build the result and hand the record to the recorder (on a pool thread). Returns the
        result and, when durable, the future of the commit (awaited by `run` on the loop)."""
        outs = [s for s in ctx.states.values() if s.node.type == "output" and s.status == SUCCEEDED]
        outputs: dict[str, Any] | None = None
        if failure is None:
            outputs = outs[0].value if len(outs) == 1 else {s.node.id: s.value for s in outs}
        explanation = assemble(ctx)
        explain_nodes = [s for s in ctx.states.values() if s.node.type == "explain" and s.status == SUCCEEDED]
        if explain_nodes:
            explanation["explain_nodes"] = {s.node.id: s.value for s in explain_nodes}
        # one object for the record and the result (`RunResult` would copy a plain dict into one): the
        # predict answer then reuses the JSON the store wrote for it (`recent_json_text`)
        explanation = Explanation(explanation)
        timings = {nid: round(s.seconds, 6) for nid, s in ctx.states.items() if s.status in (SUCCEEDED, FAILED)}
        timings["total"] = round(duration, 6)
        skipped = [nid for nid, s in ctx.states.items() if s.status == SKIPPED]
        status = "failed" if failure else "succeeded"
        result = RunResult(
            run_id=None,
            pipeline=pipeline.name,
            version=version,
            status=status,
            inputs=inputs,
            outputs=outputs,
            error=str(failure) if failure else None,
            failed_node=failure.node if failure else None,
            explanation=explanation if (explain or explain_nodes) else None,
            timings=timings,
            skipped=skipped,
            knowledge_base_versions=dict(ctx.kb_versions),
            model_versions=dict(ctx.model_versions),
            started_at=started,
            duration_s=duration,
            replay_of=replay_of,
        )
        pending = None
        fired = sum(1 for e in ctx.events if e.kind == "rule_firing")
        if fired:
            metrics.child(metrics.RULE_FIRINGS, pipeline.name).inc(fired)
        if record and self.rt.recorder is not None:
            row = dict(
                id=str(uuid.uuid4()),
                pipeline_name=pipeline.name,
                pipeline_version=version,
                knowledge_base_versions=dict(ctx.kb_versions),
                model_versions=dict(ctx.model_versions),
                inputs=inputs,
                input_hash=ihash,
                outputs=outputs,
                explanation=explanation,
                status=status,
                error=result.error,
                timings=timings,
                skipped=skipped,
                failed_node=failure.node if failure else None,
                cache_hit=False,
                replay_of=replay_of,
                started_at=started,
                duration=duration,
            )
            # the only run in flight (its caller waits for the commit): written on this pool thread when
            # the recorder is idle; with others in flight the recorder's group commit is cheaper per run
            result.run_id, pending = self._record(row, ctx.events, here=self.rt.durable and self._running <= 1)
        else:  # what fired and which branches were taken, for a caller that compares runs (replay)
            result.trace = list(ctx.events)
        metrics.child(metrics.RUNS, pipeline.name, status).inc()
        metrics.child(metrics.RUN_LATENCY, pipeline.name).observe(time.perf_counter() - ctx.t0)
        return result, pending

    def _record(self, row: dict[str, Any], events: list[TraceEvent], here: bool = False) -> tuple[str, Any]:
        """Hand the run and its trace to the recorder (one transaction). Returns the run id and,
        when durable, the commit's future to await; write-behind: None (readers of this Workbench
        flush first; failures are logged and counted). `here`: see `RunRecorder.submit` (never on
        the event loop)."""
        assert self.rt.recorder is not None
        fut = self.rt.recorder.submit(row, events, here=here)
        if self.rt.durable:
            return row["id"], fut
        fut.add_done_callback(_count_failure)
        return row["id"], None

    async def _cache_hit(
        self,
        pipeline: Pipeline,
        version: str,
        inputs: dict[str, Any],
        ihash: str,
        hit: RunRow,
        started: Any,
        t0: float,
        record: bool,
        explain: bool,
    ) -> RunResult:
        duration = time.perf_counter() - t0
        metrics.child(metrics.CACHE_HITS, pipeline.name).inc()
        timings = {"total": round(duration, 6)}
        result = RunResult(
            run_id=None,
            pipeline=pipeline.name,
            version=version,
            status="succeeded",
            inputs=inputs,
            outputs=hit.outputs,
            explanation=hit.explanation if explain else None,
            timings=timings,
            cache_hit=True,
            cached_from=hit.id,
            knowledge_base_versions=dict(hit.knowledge_base_versions or {}),
            model_versions=dict(hit.model_versions or {}),
            started_at=started,
            duration_s=duration,
        )
        if record and self.rt.recorder is not None:
            row = dict(
                id=str(uuid.uuid4()),
                pipeline_name=pipeline.name,
                pipeline_version=version,
                knowledge_base_versions=result.knowledge_base_versions,
                model_versions=result.model_versions,
                inputs=inputs,
                input_hash=ihash,
                outputs=hit.outputs,
                explanation=hit.explanation,
                status="succeeded",
                error=None,
                timings=timings,
                cached_from=hit.id,
                cache_hit=True,
                started_at=started,
                duration=duration,
            )
            run_id, pending = self._record(
                row, [TraceEvent("node", None, {"cache_hit": True, "cached_from": hit.id}, 0.0)]
            )
            result.run_id = await asyncio.wrap_future(pending) if pending is not None else run_id
        metrics.child(metrics.RUNS, pipeline.name, "succeeded").inc()
        return result
