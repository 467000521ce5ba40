"""`model` nodes: build one request from upstream values, submit it to the model's dynamic batcher
(so concurrent runs share batches), and map the outputs to facts. A skipped model node never
reaches this code, so its batcher receives nothing."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..context import FactScope, NodeState, OpenScope, RunContext
from ..errors import ModelUnloadedError, NodeExecutionError
from ..expressions import ExpressionError, compile_expression
from ..spec import FACT_FUNCTIONS
from .mapping import map_facts


def is_tensor_model(entry: Any) -> bool:
    """True when requests are `{input name: array}` (TensorRunner); False for text models (a string)."""
    from neural.runner import TensorRunner

    return isinstance(getattr(entry, "runner", None), TensorRunner)


def build_item(entry: Any, node_id: str, inputs: dict[str, Any], scope: dict[str, Any], funcs: dict[str, Any]) -> Any:
    """Evaluate the node's `inputs` expressions into one request for `entry`."""
    values: dict[str, Any] = {}
    for name, expr in inputs.items():
        try:
            values[name] = compile_expression(expr, FACT_FUNCTIONS).evaluate(scope, funcs)
        except ExpressionError as exc:
            raise NodeExecutionError(node_id, "model", f"field inputs.{name}: {exc}") from exc
        if values[name] is None:
            raise NodeExecutionError(node_id, "model", f"field inputs.{name}: expression {expr!r} gave no value")
    if is_tensor_model(entry):
        return values
    if len(values) != 1:
        raise NodeExecutionError(
            node_id, "model", f"field inputs: model {entry.name!r} takes one input (the text), got {sorted(values)}"
        )
    return next(iter(values.values()))


def output_dict(entry: Any, out: Any) -> dict[str, Any]:
    """Model output of one item as `{output name: array}` (a bare array gets the signature's first output name)."""
    if isinstance(out, dict):
        return out
    name = (
        entry.signature.outputs[0].name
        if getattr(entry, "signature", None) is not None and entry.signature.outputs
        else "output"
    )
    return {name: out}


@dataclass(slots=True)
class ModelCall:
    """A model node's request in flight: submitted on a pool thread by `start_model`, awaited on
    the event loop (`wait`), finished on a pool thread by `complete_model`."""

    node_id: str
    entry: Any
    request: Any
    funcs: dict[str, Any]
    t0: float  # when the node started (perf_counter seconds)
    submitted: float

    async def wait(self) -> Any:
        """The model's output for this item; cancelling the awaiting task cancels a queued request."""
        return await self.request.wait()

    def cancel(self) -> None:
        """Remove the request from the batcher's queue if it has not started."""
        self.request.cancel()


def start_model(ctx: RunContext, state: NodeState, rt: Any, t0: float) -> ModelCall:
    """Build the node's request from upstream values and submit it to the model's batcher.

    Raises NodeExecutionError (an input expression failed), neural.errors.QueueFullError (unchanged),
    ModelUnloadedError (the model was unloaded on request; naming the pipeline and node: the run is refused)."""
    node = state.node
    try:
        entry = rt.catalog.get(node.get("model"))
    except ModelUnloadedError as exc:
        raise exc.in_node(ctx.pipeline.name, node.id) from None
    ctx.model_versions[entry.name] = entry.version
    facts_in = ctx.incoming_facts(node.id)
    fs = FactScope(facts_in)
    scope = OpenScope({**fs.names(), **ctx.values_scope(node.id)})
    funcs = fs.functions()
    item = build_item(entry, node.id, node.get("inputs", {}), scope, funcs)
    # held: the executor releases it once the step ends, maybe running it on its own thread
    # (`InferenceRequest.dispatch`, handoff.py); QueueFullError passes through unchanged
    req = entry.submit(item, timeout_s=node.get("timeout_s"), hold=True)
    return ModelCall(node.id, entry, req, funcs, t0, time.perf_counter())


def complete_model(ctx: RunContext, state: NodeState, call: ModelCall, outcome: Any) -> None:
    """Map the model's output (or its error, `outcome` an exception) to the node's facts and record.

    Raises NodeExecutionError (the model failed, or a fact mapping failed), QueueFullError."""
    node, entry, req = state.node, call.entry, call.request
    if isinstance(outcome, BaseException):
        ctx.event(
            "model_call",
            node.id,
            {
                "model": entry.name,
                "version": entry.version,
                "ok": False,
                "error": str(outcome),
                "batch_id": req.batch_id,
                "batch_size": req.batch_size,
            },
        )
        from neural.errors import QueueFullError  # loaded already: the model ran

        if isinstance(outcome, QueueFullError):
            raise outcome
        named = getattr(outcome, "model", None) == entry.name  # the batcher's errors name the model already
        raise NodeExecutionError(
            node.id, node.type, str(outcome) if named else f"model {entry.name!r}: {outcome}"
        ) from outcome
    latency = time.perf_counter() - call.submitted
    outputs = output_dict(entry, outcome)
    record = {
        "model": entry.name,
        "version": entry.version,
        "ok": True,
        "batch_id": req.batch_id,
        "batch_size": req.batch_size,
        "queue_s": req.queue_time_s,
        "compute_s": req.compute_time_s,
        "latency_s": latency,
    }
    ctx.event("model_call", node.id, record)
    labels = node.get("labels")
    mscope: dict[str, Any] = {
        **ctx.values_scope(node.id),
        **outputs,
        "outputs": outputs,
        "input": ctx.inputs,
        "labels": labels,
    }
    funcs = {"label": lambda x: _label(labels, x), **call.funcs}
    state.facts = map_facts(node.id, node.type, node.get("facts") or [], mscope, funcs)
    state.value = outputs
    state.record = {"call": record, "facts_out": [ctx.text(f) for f in state.facts]}


def _label(labels: list[Any] | None, x: Any) -> Any:
    i = int(np.argmax(np.asarray(x)))
    if not labels:
        return i
    if i >= len(labels):
        raise ValueError(f"argmax {i} is outside the node's {len(labels)} labels")
    return labels[i]
