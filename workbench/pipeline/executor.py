"""The asyncio executor: runs a pipeline on one input, records the run and its trace.

Nodes run in topological generations; the nodes of one generation run concurrently. A node is
skipped when its incoming edges are inactive (see docs/pipelines.md, "Gates and skipping"),
so a model behind a closed gate never reaches its batcher. Many runs may be in flight at once
on one event loop: their model nodes submit to the same per-model batchers and are batched
together. A failing node fails only its own run, which is recorded with the error naming the
node; `neural.errors.QueueFullError` is re-raised unchanged (back-pressure: nothing recorded).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
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
from .errors import InputValidationError, NodeExecutionError
from .explanation import assemble
from .knowledge import KnowledgeBaseLibrary
from .nodes import HANDLERS
from .recorder import RunRecorder
from .result import RunResult
from .schema import check_json_numbers, check_schema
from .spec import Pipeline


@dataclass(slots=True)
class Runtime:
    """What node handlers use: knowledge bases, models, and where runs are recorded."""

    library: KnowledgeBaseLibrary
    catalog: ModelCatalog
    store: Store | None = None
    recorder: RunRecorder | None = None
    durable: bool = False  # True: a run returns only after its record is committed; False: write-behind


def _count_failure(fut: Any) -> None:
    if fut.exception() is not None:
        metrics.RECORD_FAILURES.inc()


def input_hash(inputs: Any) -> str:
    """SHA-256 hex of the canonical JSON of a run input (sorted keys, compact): the result-cache key."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


class Executor:
    """Runs pipelines with a `Runtime`. Safe to use from many tasks of one event loop."""

    def __init__(self, runtime: Runtime):
        self.rt = runtime
        self._plans: dict[str, Plan] = {}

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
        """
        started = utcnow()
        t0 = time.perf_counter()
        plan = self._plan(pipeline)
        version = plan.version
        for i, node in enumerate(pipeline.nodes_of("input")):
            if i == 0:
                check_json_numbers(node.id, inputs)
            check_schema(node.id, node.get("schema"), inputs)
        ihash = input_hash(inputs)
        cacheable = pipeline.cache if use_cache is None else (use_cache and pipeline.cache)
        if cacheable and self.rt.store is not None:
            if self.rt.recorder is not None:
                await self.rt.recorder.aflush()  # see our own earlier runs
            hit = await asyncio.to_thread(self.rt.store.cached_run, version, ihash)
            if hit is not None:
                return await self._cache_hit(pipeline, version, inputs, ihash, hit, started, t0, record, explain)

        ctx = RunContext(pipeline, inputs, base_dir=base_dir, plan=plan, explain=explain)
        ctx.recorded, ctx.regenerate, ctx.listener = recorded or {}, regenerate, listener
        failure: NodeExecutionError | None = None
        for generation in plan.generations:
            runnable = []
            for nid in generation:
                st = ctx.states[nid]
                if failure is not None:
                    st.status, st.reason = SKIPPED, f"not run: node {failure.node!r} failed"
                    continue
                reason = self._skip_reason(ctx, nid)
                if reason is not None:
                    st.status, st.reason = SKIPPED, reason
                    ctx.event("node", nid, {"type": st.node.type, "status": "skipped", "reason": reason})
                    if st.node.type == "model":
                        metrics.GATE_SKIPS.labels(pipeline.name, st.node.get("model")).inc()
                    continue
                runnable.append(nid)
            if not runnable:
                continue
            if len(runnable) == 1:
                outcomes = [await self._run_node(ctx, runnable[0])]
            else:
                outcomes = await asyncio.gather(*(self._run_node(ctx, nid) for nid in runnable))
            for err in outcomes:
                if err is not None and failure is None:
                    failure = err
        duration = time.perf_counter() - t0
        return await self._finish(
            ctx, pipeline, version, inputs, ihash, failure, started, duration, explain, record, replay_of
        )

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

    async def _run_node(self, ctx: RunContext, nid: str) -> NodeExecutionError | None:
        st = ctx.states[nid]
        t = time.perf_counter()
        try:
            await HANDLERS[st.node.type](ctx, st, self.rt)
        except NodeExecutionError as exc:
            err = exc if exc.node == nid else NodeExecutionError(nid, st.node.type, str(exc))
            return self._failed(ctx, st, t, err)
        except InputValidationError as exc:
            return self._failed(ctx, st, t, NodeExecutionError(nid, st.node.type, str(exc)))
        except neural_errors.QueueFullError:
            raise
        except neural_errors.InputValidationError as exc:
            # a value that cannot become the model's dtype or shape is bad input: refused, nothing recorded
            raise InputValidationError(nid, f"inputs.{exc.input_name}", str(exc)) from exc
        except Exception as exc:
            return self._failed(ctx, st, t, NodeExecutionError(nid, st.node.type, f"{type(exc).__name__}: {exc}"))
        st.seconds = time.perf_counter() - t
        st.status = SUCCEEDED
        metrics.NODE_LATENCY.labels(ctx.pipeline.name, st.node.type).observe(st.seconds)
        if ctx.listener is not None:
            ctx.listener("node", nid, {"type": st.node.type, "status": SUCCEEDED, "seconds": round(st.seconds, 6)})
        return None

    @staticmethod
    def _failed(ctx: RunContext, st: Any, t: float, err: NodeExecutionError) -> NodeExecutionError:
        st.seconds = time.perf_counter() - t
        st.status, st.reason = FAILED, str(err)
        ctx.event("node", st.node.id, {"type": st.node.type, "status": "failed", "error": str(err)})
        return err

    async def _finish(
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
    ) -> RunResult:
        outs = [s for s in ctx.states.values() if s.node.type == "output" and s.status == SUCCEEDED]
        outputs: dict[str, Any] | None = None
        if failure is None:
            outputs = outs[0].value if len(outs) == 1 else {s.node.id: s.value for s in outs}
        explanation = assemble(ctx)
        explain_nodes = [s for s in ctx.states.values() if s.node.type == "explain" and s.status == SUCCEEDED]
        if explain_nodes:
            explanation["explain_nodes"] = {s.node.id: s.value for s in explain_nodes}
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
        fired = sum(1 for e in ctx.events if e.kind == "rule_firing")
        if fired:
            metrics.RULE_FIRINGS.labels(pipeline.name).inc(fired)
        if record and self.rt.recorder is not None:
            stored_timings = dict(timings, _skipped=skipped)
            if failure:
                stored_timings["_failed_node"] = failure.node
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
                timings=stored_timings,
                cache_hit=False,
                replay_of=replay_of,
                started_at=started,
                duration=duration,
            )
            result.run_id = await self._record(row, ctx.events)
        metrics.RUNS.labels(pipeline.name, status).inc()
        metrics.RUN_LATENCY.labels(pipeline.name).observe(time.perf_counter() - ctx.t0)
        return result

    async def _record(self, row: dict[str, Any], events: list[TraceEvent]) -> str:
        """Write the run and its trace (one transaction). Durable: wait for the commit. Write-behind:
        return the id at once; readers of this Workbench flush first, failures are logged and counted."""
        assert self.rt.recorder is not None
        if self.rt.durable:
            return await self.rt.recorder.record(row, events)
        fut = self.rt.recorder.submit(row, events)
        fut.add_done_callback(_count_failure)
        return row["id"]

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
        metrics.CACHE_HITS.labels(pipeline.name).inc()
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
                timings=dict(timings, _cached_from=hit.id),
                cache_hit=True,
                started_at=started,
                duration=duration,
            )
            result.run_id = await self._record(
                row, [TraceEvent("node", None, {"cache_hit": True, "cached_from": hit.id}, 0.0)]
            )
        metrics.RUNS.labels(pipeline.name, "succeeded").inc()
        return result
