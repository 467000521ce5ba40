"""`explain` nodes: the explanation of everything upstream, as the node's value (see explanation.py)."""

from __future__ import annotations

from typing import Any

from ..context import NodeState, RunContext
from ..explanation import assemble


async def run_explain(ctx: RunContext, state: NodeState, rt: Any) -> None:
    node = state.node
    state.facts = ctx.incoming_facts(node.id)
    state.value = assemble(ctx, targets=node.get("targets") or sorted({f.template for f in state.facts}), at_node=node.id)
    state.record = {"targets": node.get("targets")}
