"""`explain` nodes: the explanation of everything upstream, as the node's value (see explanation.py)."""

from __future__ import annotations

from typing import Any

from ..context import NodeState, RunContext
from ..explanation import derivations


def run_explain(ctx: RunContext, state: NodeState, rt: Any) -> None:
    """Value: `{"targets": [...], "derivations": [...]}` for the facts reaching this node (the run's
    full explanation — gates, model calls, overrides — is assembled once at the end of the run)."""
    node = state.node
    state.facts = ctx.incoming_facts(node.id)
    targets = node.get("targets") or sorted({f.template for f in state.facts})
    state.value = {"targets": targets, "derivations": derivations(ctx, node.id, targets)}
    state.record = {"targets": targets}
