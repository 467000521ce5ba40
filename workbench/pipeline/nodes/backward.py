"""Adapter to the backward-chaining prover (`chaining.backward.Session`), kept in one place so the
goal node and `Workbench.ask` share one call shape."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rules.facts import Fact


async def prove(
    kb: Any,
    goal: str,
    facts: list[Fact],
    *,
    limit: int | None,
    max_depth: int | None,
    timeout: float | None,
    functions: Mapping[str, Callable] | None = None,
    provider: Any = None,
) -> tuple[list[dict[str, Any]], list[Fact], list[dict[str, Any]]]:
    """Prove `goal` over `kb` with `facts` as working-memory facts (deffacts are added).

    Returns:
        (answers as `{"bindings", "fact", "certainty", "proof"}` dicts, the proven facts of
        single-pattern goals, the skipped rules as `{"rule", "reason"}`).
    Raises:
        chaining.backward.BackwardError subclasses (GoalSyntaxError, DepthLimitError, ProofTimeout, ...).
    """
    from chaining.backward import ProverConfig, Session

    cfg = ProverConfig(timeout=timeout or 30.0) if max_depth is None else ProverConfig(max_depth, timeout or 30.0)
    session = Session(
        kb, facts=[Fact(f.template, f.slots) for f in facts], config=cfg, functions=functions, provider=provider
    )
    result = await session.prove(goal, limit=limit)
    answers = [a.to_dict() for a in result.answers]
    proven = [Fact(a.fact.template, a.fact.slots) for a in result.answers if a.fact is not None]
    return answers, proven, [s.to_dict() for s in result.skipped_rules]


def prove_sync(
    kb: Any, goal: str, facts: list[Fact], **kwargs: Any
) -> tuple[list[dict[str, Any]], list[Fact], list[dict[str, Any]]]:
    """`prove` for a thread without a running event loop (a pipeline run's pool thread): the
    prover's own coroutine runs on a private loop in this thread. Same arguments and errors."""
    import asyncio

    return asyncio.run(prove(kb, goal, facts, **kwargs))
