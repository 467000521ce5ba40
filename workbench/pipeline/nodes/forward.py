"""`rules`, `gate` and `postprocess` nodes: forward chaining on the real CLIPS engine over the
facts arriving on active edges. The record keeps every firing with the ids of the facts that
activated it and the facts it asserted and retracted (from the engine's trace: CLIPS's firing and
fact callbacks), which is what explanations read."""

from __future__ import annotations

from typing import Any

from chaining.forward import EvaluationCancelled, ForwardError, RunawayError
from rules.facts import Fact, typed_fact

from ..context import NodeState, RunContext
from ..errors import NodeExecutionError, RunCancelled


def evaluate(ctx: RunContext, state: NodeState, rt: Any) -> tuple[Any, list[Fact], Any]:
    """Run the node's knowledge base on its incoming facts; returns (kb, facts_in, ForwardResult).
    Raises NodeExecutionError, RunCancelled (`ctx.cancel` was cancelled: the evaluation was halted)."""
    node = state.node
    kb = rt.library.load(node.knowledge_bases, ctx.base_dir)
    ctx.kb_versions[kb.name] = kb.version
    facts_in = ctx.incoming_facts(node.id)
    try:
        with rt.library.lease(kb) as engine:
            result = engine.evaluate(
                facts_in,
                strategy=node.get("strategy"),
                max_firings=node.get("max_firings"),
                timeout=node.get("timeout_s"),
                trace_versions=ctx.explain,  # an explanation shows what each firing matched, not only ids
                cancel=ctx.cancel,  # the caller left: the evaluation is halted, the run not recorded
            )
    except EvaluationCancelled as exc:
        raise RunCancelled(node.id, f"knowledge base {kb.name!r}: {exc}") from exc
    except RunawayError as exc:
        msg = str(exc) if "last rules" in str(exc) else f"{exc} (last rules fired: {', '.join(exc.last_rules)})"
        raise NodeExecutionError(node.id, node.type, f"knowledge base {kb.name!r}: {msg}") from exc
    except (ForwardError, ValueError) as exc:
        raise NodeExecutionError(node.id, node.type, f"knowledge base {kb.name!r}: {exc}") from exc
    ss = kb.string_slots()
    if ss:  # the given facts as CLIPS stored them: a plain str in a STRING-only slot is a string
        facts_in = [typed_fact(f, ss[f.template]) if f.template in ss else f for f in facts_in]
    _record(ctx, state, kb, facts_in, result)
    return kb, facts_in, result


def _partial(f: Fact, held: Fact | None) -> bool:
    """Whether given fact `f` leaves out slots (or gives None) that `held`, its working-memory copy, has."""
    return (
        held is not None
        and not f.is_ordered
        and held.template == f.template
        and (f.slots.keys() != held.slots.keys() or any(v is None for v in f.slots.values()))
    )


def _as_held(f: Fact, held: Fact, ctx: RunContext) -> Fact:
    """The given fact as CLIPS holds it: slots it left out or gave as None (`tags: input.tags` without
    `tags` in the input) take `held`'s values, the slot defaults, in the template's slot order (else the
    fact is not recognised as given and the explanation called it a deffacts fact). `f` when `held`
    differs in the slots given."""
    given = f.slots
    completed = Fact(f.template, {k: v if (v := given.get(k)) is not None else held.slots[k] for k in held.slots})
    return completed if ctx.same(held, completed) else f


def _record(ctx: RunContext, state: NodeState, kb: Any, facts_in: list[Fact], result: Any) -> None:
    """The node's part of the explanation. Facts stay `Fact`s here (`state.wm`); their text is
    rendered only for the facts an explanation shows (explanation.py), not for all of them."""
    node = state.node
    final = {f.id: f for f in result.facts}
    state.wm = dict(final)
    # Given facts are asserted before the trace starts: deffacts first, then the inputs in order.
    n_deffacts = sum(len(d.facts) for d in kb.facts.values())
    given_ids = {n_deffacts + i + 1: f for i, f in enumerate(facts_in)}
    partial = [fid for fid, f in given_ids.items() if _partial(f, final.get(fid))]
    if partial:  # complete them from working memory, unless a rule modified them (then the content differs)
        changed = {ev.fact for ev in result.events if ev.kind == "assert" and ev.firing is not None}
        given_ids.update({fid: _as_held(given_ids[fid], final[fid], ctx) for fid in partial if fid not in changed})
    given_modified: dict[int, Fact] = {}
    kept = all(fid not in final or ctx.same(final[fid], f) for fid, f in given_ids.items())
    if not kept:  # a `modify` keeps the fact id and changes the content (only then the events are read)
        modified = {ev.fact for ev in result.events if ev.kind == "assert" and ev.firing is not None}
        kept = all(fid not in final or fid in modified or ctx.same(final[fid], f) for fid, f in given_ids.items())
        if kept:  # explanations show such a fact's earlier version as given
            given_modified = {fid: f for fid, f in given_ids.items() if fid in modified}
    given_as_sent: dict[int, Fact] = {}
    if kept:
        input_ids = set(given_ids)
        sent = {n_deffacts + i + 1: f for i, f in enumerate(facts_in)}
        given_as_sent = {fid: f for fid, f in sent.items() if f is not given_ids[fid]}
        state.wm.update({fid: f for fid, f in given_ids.items() if fid not in final})
    else:  # a duplicate shifted the ids: keep only what the final working memory proves
        keys = {ctx.key(f) for f in facts_in}
        input_ids = {fid for fid, f in final.items() if ctx.key(f) in keys}
    firings = [
        {"index": i, "rule": fr.rule, "facts": list(fr.facts), "asserted": [], "retracted": []}
        for i, fr in enumerate(result.firings)
    ]
    for ev in result.events:
        if ev.firing is not None and ev.firing < len(firings):
            firings[ev.firing]["asserted" if ev.kind == "assert" else "retracted"].append(ev.fact)
    for fr in firings:
        ctx.event("rule_firing", node.id, {"knowledge_base": kb.name, **fr})
    state.record = {
        "knowledge_base": kb.name,
        "version": kb.version,
        "input_ids": input_ids,
        "final": sorted(final),
        "given_modified": given_modified,
        "given_as_sent": given_as_sent,  # given facts completed by `_as_held`, as the upstream node sent them
        "versions": result.versions,  # fact versions a retract or modify ended (only when explaining)
        "firings": firings,
        "output": result.output,
    }


def _emit(ctx: RunContext, state: NodeState, result: Any) -> list[Fact]:
    emit = state.node.get("emit")
    return ctx.strip_ids([f for f in result.facts if f.template in emit] if emit else result.facts)


def run_rules(ctx: RunContext, state: NodeState, rt: Any) -> None:
    _, _, result = evaluate(ctx, state, rt)
    state.facts = _emit(ctx, state, result)
    ctx.event("node", state.node.id, {"type": "rules", "firings": len(result.firings), "facts_out": len(state.facts)})


def run_postprocess(ctx: RunContext, state: NodeState, rt: Any) -> None:
    _, facts_in, result = evaluate(ctx, state, rt)
    # typed identity (rules.facts.fact_key): a rule turning the symbol `a` into the string "a" is an override
    out_k = [ctx.key(f) for f in result.facts]
    in_k = [ctx.key(f) for f in facts_in]
    out_keys, in_keys = set(out_k), set(in_k)
    removed = [ctx.text(f) for f, k in zip(facts_in, in_k) if k not in out_keys]
    added = [ctx.text(f) for f, k in zip(result.facts, out_k) if k not in in_keys]
    state.record["overrides"] = {"removed": removed, "added": added}
    state.facts = _emit(ctx, state, result)
    ctx.event(
        "node",
        state.node.id,
        {"type": "postprocess", "firings": len(result.firings), "removed": removed, "added": added},
    )


def run_gate(ctx: RunContext, state: NodeState, rt: Any) -> None:
    node = state.node
    kb, _, result = evaluate(ctx, state, rt)
    dec = node.decision
    deciding = [f for f in result.facts if f.template == dec["template"]]
    branches = {str(_slot(f, dec["slot"])) for f in deciding if _slot(f, dec["slot"]) is not None}
    default_used = False
    if not branches and node.get("default") is not None:
        branches = {node.get("default")}
        default_used = True
    state.branches = branches
    edges = {e.target: (e.when is None or e.when in branches) for e in ctx.outgoing(node.id)}
    payload = {
        "branches": sorted(branches),
        "default_used": default_used,
        "decision_facts": [f.id for f in deciding],
        "decision_text": [ctx.text(f) for f in deciding],
        "edges": edges,
    }
    if ctx.explain:  # WHY NOT for each branch not taken (chaining.explain.forward_why_not), only when asked
        payload["why_not"] = _why_not(
            kb, result, dec, sorted({e.when for e in ctx.outgoing(node.id) if e.when and e.when not in branches})
        )
    state.record["decision"] = payload
    state.facts = _emit(ctx, state, result)
    ctx.event("gate_decision", node.id, payload)


def _why_not(kb: Any, result: Any, dec: dict[str, str], branches: list[str]) -> dict[str, Any]:
    """`{branch: WhyNot.to_dict()}`: the rules that could have chosen each branch and their first failing premise.

    Runs on the run's pool thread (forward_why_not runs its own event loop, which a pool thread may)."""
    from chaining.explain import forward_why_not

    out: dict[str, Any] = {}
    for b in branches:
        pattern = f"({dec['template']} ({dec['slot']} {b}))"
        try:
            out[b] = forward_why_not(kb, result, pattern).to_dict()
        except Exception as exc:  # an explanation must never fail the run
            out[b] = {"goal": pattern, "error": f"{type(exc).__name__}: {exc}"}
    return out


def _slot(f: Fact, slot: str) -> Any:
    if slot in f.slots:
        v = f.slots[slot]
        return v[0] if isinstance(v, tuple) and len(v) == 1 else v
    if f.is_ordered and f.values:
        return f.values[0]
    return None
