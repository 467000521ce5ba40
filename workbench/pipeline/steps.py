"""One pipeline run stepped through its topological generations (`StepRun`), and the input checks
that come before it. Node handlers run on pool threads; model and generate calls are prepared here
and awaited on the event loop by the `Executor` (executor.py)."""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

from chaining.forward import Cancellation
from neural import errors as neural_errors

from . import metrics
from .context import SKIPPED, Plan, RunContext
from .errors import InputValidationError, ModelInputError, NodeExecutionError, RunCancelled
from .nodes.generate import GenerateCall, complete_generate, start_generate
from .nodes.model import ModelCall, complete_model, start_model
from .result import RunResult
from .schema import check_json_numbers, check_schema
from .spec import Pipeline

if TYPE_CHECKING:
    from .executor import Executor


def input_hash(inputs: Any) -> str:
    """SHA-256 hex of the canonical JSON of a run input (sorted keys, compact): the result-cache key."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def check_input(pipeline: Pipeline, inputs: dict[str, Any], plan: Plan | None = None) -> str:
    """Check the input against the input nodes' schemas; returns its hash (the result-cache key).
    `plan`: the pipeline's run plan, which keeps each schema's compiled checks (`Plan.schema_check`).

    The input is serialised once: the canonical JSON that is hashed is also the check that it
    holds only JSON numbers (`allow_nan=False`); only when that fails is it walked to name the path.

    Raises InputValidationError naming the node and the JSON path."""
    canonical: bytes | None = None
    try:
        canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    except (ValueError, TypeError):
        pass
    for i, node in enumerate(pipeline.nodes_of("input")):
        if i == 0 and canonical is None:
            check_json_numbers(node.id, inputs)
        check_schema(node.id, node.get("schema"), inputs, plan.schema_check(node) if plan is not None else None)
    return hashlib.sha256(canonical).hexdigest() if canonical is not None else input_hash(inputs)


class StepRun:
    """One run stepped through its topological generations on pool threads. `advance` runs every
    node it can and returns the model calls to wait for (empty when the run is finished; then
    `result` is set and `pending` is the durable commit's future, if any)."""

    def __init__(
        self,
        executor: Executor,
        pipeline: Pipeline,
        plan: Plan,
        inputs: dict[str, Any],
        ihash: str | None,
        base_dir: str | None,
        explain: bool,
        record: bool,
        replay_of: str | None,
        started: Any,
        t0: float,
    ):
        self.ex = executor
        self.pipeline, self.plan, self.inputs, self.ihash = pipeline, plan, inputs, ihash
        self.base_dir, self.explain, self.record, self.replay_of = base_dir, explain, record, replay_of
        self.started, self.t0 = started, t0
        self.ctx: RunContext | None = None
        self.failure: NodeExecutionError | None = None
        self.generation = 0
        self.calls: list[ModelCall | GenerateCall] = []
        self.result: RunResult | None = None
        self.pending: Any = None
        self.extras: tuple[dict[str, Any], bool, Any] = ({}, False, None)  # recorded, regenerate, listener
        # cancelled by the executor when the caller leaves: the step running then stops (RunCancelled)
        self.cancel = Cancellation()

    def advance(self, outcomes: list[Any] | None) -> list[ModelCall | GenerateCall]:
        if self.result is not None:  # finished
            return []
        if self.ctx is None:
            if self.ihash is None:
                self.ihash = check_input(self.pipeline, self.inputs, self.plan)
            self.ctx = RunContext(
                self.pipeline, self.inputs, base_dir=self.base_dir, plan=self.plan, explain=self.explain
            )
            self.ctx.recorded, self.ctx.regenerate, self.ctx.listener = self.extras
            self.ctx.cancel = self.cancel
        ctx, ex = self.ctx, self.ex
        for call, outcome in zip(self.calls, outcomes or ()):
            st = ctx.states[call.node_id]
            try:
                if isinstance(call, GenerateCall):
                    if isinstance(outcome, (NodeExecutionError, neural_errors.QueueFullError)):
                        raise outcome
                    complete_generate(ctx, st, call, outcome)
                else:
                    complete_model(ctx, st, call, outcome)
            except NodeExecutionError as exc:
                err = exc if exc.node == st.node.id else NodeExecutionError(st.node.id, st.node.type, str(exc))
                self.failure = self.failure or ex._failed(ctx, st, call.t0, err)
            except InputValidationError as exc:
                err = NodeExecutionError(st.node.id, st.node.type, str(exc))
                self.failure = self.failure or ex._failed(ctx, st, call.t0, err)
            except Exception as exc:
                if isinstance(exc, neural_errors.QueueFullError):
                    raise
                err = ex._failed(
                    ctx, st, call.t0, NodeExecutionError(st.node.id, "model", f"{type(exc).__name__}: {exc}")
                )
                self.failure = self.failure or err
            else:
                ex._succeeded(ctx, st, call.t0)
        self.calls = []
        generations = self.plan.generations
        cancel = self.cancel
        while self.generation < len(generations):
            if cancel.cancelled:  # the caller left during this step: no further node runs
                raise RunCancelled(None, "run cancelled by its caller")
            generation = generations[self.generation]
            self.generation += 1
            calls: list[ModelCall | GenerateCall] = []
            try:
                for nid in generation:
                    st = ctx.states[nid]
                    if self.failure is not None:
                        st.status, st.reason = SKIPPED, f"not run: node {self.failure.node!r} failed"
                        continue
                    reason = ex._skip_reason(ctx, nid)
                    if reason is not None:
                        st.status, st.reason = SKIPPED, reason
                        ctx.event("node", nid, {"type": st.node.type, "status": "skipped", "reason": reason})
                        if st.node.type == "model":
                            metrics.child(metrics.GATE_SKIPS, self.pipeline.name, st.node.get("model")).inc()
                        continue
                    if st.node.type in ("model", "generate"):  # prepared here, awaited on the loop
                        t = time.perf_counter()
                        start = start_model if st.node.type == "model" else start_generate
                        try:
                            calls.append(start(ctx, st, ex.rt, t))
                        except NodeExecutionError as exc:
                            self.failure = self.failure or ex._failed(ctx, st, t, exc)
                        except BaseException as exc:  # refused: the calls are cancelled below
                            if isinstance(exc, neural_errors.InputValidationError):
                                # a value that cannot become the model's dtype or shape is bad input (nothing recorded)
                                raise ModelInputError(nid, f"inputs.{exc.input_name}", str(exc)) from exc
                            raise
                        continue
                    err = ex._run_node(ctx, nid)
                    if err is not None and self.failure is None:
                        self.failure = err
            except BaseException:  # refused: nothing of this run may stay queued (model requests are held)
                for c in calls:
                    c.request.cancel()
                raise
            if calls:
                self.calls = calls
                return calls
        if cancel.cancelled:  # nor is it recorded
            raise RunCancelled(None, "run cancelled by its caller")
        duration = time.perf_counter() - self.t0
        self.result, self.pending = ex._finish(
            ctx,
            self.pipeline,
            self.plan.version,
            self.inputs,
            self.ihash,
            self.failure,
            self.started,
            duration,
            self.explain,
            self.record,
            self.replay_of,
        )
        # The run's working state (facts, working memories, records: thousands of objects) is freed
        # here, on the pool thread, not on the event loop when the awaiting coroutine lets go of this
        # step (py-spy: ~5% of the GIL time at c=64 was that deallocation, on the loop).
        self.ctx = None
        return []
