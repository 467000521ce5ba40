"""Node handlers: one module per kind of node. Each handler is `def run(ctx, state, rt)`, called on
a pool thread (never on the event loop); it fills `state.facts`, `state.value`, `state.record`
(and `state.branches` for gates) and appends trace events to `ctx`. `HANDLERS` maps a node type
to its handler. Model and generate nodes are split in two around the wait for the model
(`model.start_model` / `complete_model`, `generate.start_generate` / `complete_generate`), which
the executor does on the loop."""

from __future__ import annotations

from . import explain, forward, goal, io

HANDLERS = {
    "input": io.run_input,
    "output": io.run_output,
    "rules": forward.run_rules,
    "gate": forward.run_gate,
    "postprocess": forward.run_postprocess,
    "goal": goal.run_goal,
    "explain": explain.run_explain,
}

__all__ = ["HANDLERS"]
