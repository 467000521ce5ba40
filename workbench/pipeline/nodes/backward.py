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
    catalog: Any = None,
    models: Any = None,
    cancel: Any = None,
) -> tuple[list[dict[str, Any]], list[Fact], list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Prove `goal` over `kb` with `facts` as working-memory facts (deffacts are added).

    `catalog` (a `ModelCatalog`) answers the model-backed relations (`;@model`) with its models,
    every question pending in the query in one predict call per model; never the `provider`.
    `models`: a `CatalogModels` to use instead (kept across proofs, it asks about each fact once).
    `cancel`: a `chaining.forward.Cancellation`; its `cancel()` from any thread stops the proof (ProofCancelled).

    Returns:
        (answers as `{"bindings", "fact", "certainty", "proof"}` dicts, the proven facts of
        single-pattern goals, the skipped rules as `{"rule", "reason"}`, the model calls made for
        model-backed relations as `{"model", "version", "batch"}`, the proof's warnings: premises that
        could not be evaluated, askable facts not asked for want of a provider).
    Raises:
        chaining.backward.BackwardError subclasses (GoalSyntaxError, DepthLimitError, ProofTimeout,
        ProofCancelled, ...).
    """
    from chaining.backward import ProverConfig, Session

    cfg = ProverConfig(timeout=timeout or 30.0) if max_depth is None else ProverConfig(max_depth, timeout or 30.0)
    if models is None and catalog is not None and any(spec.model is not None for spec in kb.askable_specs.values()):
        from workbench.backward_models import CatalogModels

        models = CatalogModels(catalog, timeout_s=timeout)
    session = Session(
        kb,
        facts=[Fact(f.template, f.slots) for f in facts],
        config=cfg,
        functions=functions,
        provider=provider,
        models=models,
    )
    result = await session.prove(goal, limit=limit, cancel=cancel)
    answers = [a.to_dict() for a in result.answers]
    proven = [Fact(a.fact.template, a.fact.slots) for a in result.answers if a.fact is not None]
    return answers, proven, [s.to_dict() for s in result.skipped_rules], result.model_calls, list(result.warnings)


def prove_sync(
    kb: Any, goal: str, facts: list[Fact], **kwargs: Any
) -> tuple[list[dict[str, Any]], list[Fact], list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """`prove` for a thread without a running event loop (a pipeline run's pool thread): the
    prover's own coroutine runs on a private loop in this thread. Same arguments and errors."""
    import asyncio

    return asyncio.run(prove(kb, goal, facts, **kwargs))
