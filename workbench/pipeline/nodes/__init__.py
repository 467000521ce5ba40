"""Node handlers: one module per kind of node. Each handler is `async def run(ctx, state, rt)`; it
fills `state.facts`, `state.value`, `state.record` (and `state.branches` for gates) and appends
trace events to `ctx`. `HANDLERS` maps a node type to its handler."""

from __future__ import annotations

from . import explain, forward, generate, goal, io, model

HANDLERS = {
    "input": io.run_input,
    "output": io.run_output,
    "model": model.run_model,
    "generate": generate.run_generate,
    "rules": forward.run_rules,
    "gate": forward.run_gate,
    "postprocess": forward.run_postprocess,
    "goal": goal.run_goal,
    "explain": explain.run_explain,
}

__all__ = ["HANDLERS"]
