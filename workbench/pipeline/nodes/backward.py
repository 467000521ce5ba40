"""Adapter to the backward-chaining prover (`chaining.backward`, engineer A's room).

Kept in one place so that the goal node does not depend on the prover's exact call shape.
"""

from __future__ import annotations

from typing import Any

from rules.facts import Fact

from ..errors import NodeExecutionError


def prove(kb: Any, goal: str, facts: list[Fact], *, limit: int | None, max_depth: int | None, timeout: float | None
          ) -> tuple[list[dict[str, Any]], list[Fact], list[Any]]:
    """Prove `goal` over `kb` with `facts` as base facts.

    Returns (answers as `{"bindings": {...}, "certainty": ..., "proof": {...}}`, the proven goal
    instances as facts, the rules the prover skipped with reasons).

    Raises:
        NodeExecutionError: the prover is not installed in this checkout.
    """
    try:
        import chaining.backward as bw
    except ImportError as exc:
        raise NodeExecutionError("goal", "goal", f"backward chaining (chaining.backward) is not available: {exc}") from exc
    return bw_prove(bw, kb, goal, facts, limit=limit, max_depth=max_depth, timeout=timeout)


def bw_prove(bw: Any, kb: Any, goal: str, facts: list[Fact], *, limit, max_depth, timeout):
    raise NodeExecutionError("goal", "goal", "backward chaining adapter not yet bound to chaining.backward's API")
