"""Explanations assembled from what a run recorded — never re-derived.

For a fact reaching an explain or output node, the derivation walks back: the firing that
asserted it in its node's working memory (rule name, the facts that activated it), those facts
recursively, and across nodes by fact content to the node that emitted it: a model call (model,
version, batch size), the run input, or a knowledge base's deffacts. Gate decisions, model
calls and overrides are listed beside the derivations. Derivations have the one shape of
`chaining.derivation` (`premises` under their conclusion), with the pipeline's `node`,
`knowledge_base` and, for model outputs, `model`, `version`, `batch_size`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chaining.explain_trace import version_at
from rules.facts import Fact

from .context import SKIPPED, SUCCEEDED, RunContext
from .expressions import compile_expression
from .spec import FACT_FUNCTIONS

FORWARD_TYPES = ("rules", "gate", "postprocess")
MAX_DEPTH = 32


def assemble(ctx: RunContext, targets: Iterable[str] | None = None, at_node: str | None = None) -> dict[str, Any]:
    """The explanation of a run so far.

    Args:
        targets: templates whose facts get derivation trees (default: the templates read by the
            output nodes' fields).
        at_node: explain the facts reaching this node (default: the output nodes).
    Returns:
        JSON-ready `{"pipeline", "nodes", "gates", "model_calls", "overrides", "proofs", "derivations", "summary"}`.
    """
    p = ctx.pipeline
    nodes = []
    gates, calls, overrides, proofs, generations = [], [], [], [], []
    for nid, st in ctx.states.items():
        entry: dict[str, Any] = {"id": nid, "type": st.node.type, "status": st.status, "seconds": round(st.seconds, 6)}
        if st.reason:
            entry["reason"] = st.reason
        nodes.append(entry)
        rec = st.record
        if st.status != SUCCEEDED:
            continue
        if "decision" in rec:
            because = [_derive(ctx, nid, fid, 0, set()) for fid in rec["decision"]["decision_facts"]]
            gates.append(
                {
                    "node": nid,
                    "branches": rec["decision"]["branches"],
                    "default_used": rec["decision"]["default_used"],
                    "because": because,
                    "edges": rec["decision"]["edges"],
                    "why_not": rec["decision"].get("why_not", {}),
                }
            )
        if "call" in rec:
            c = rec["call"]
            calls.append(
                {
                    "node": nid,
                    "model": c["model"],
                    "version": c["version"],
                    "batch_size": c["batch_size"],
                    "queue_ms": _ms(c.get("queue_s")),
                    "compute_ms": _ms(c.get("compute_s")),
                    "facts": rec.get("facts_out", []),
                }
            )
        if "overrides" in rec and rec["overrides"]["removed"]:  # only-added facts are derivations, not overrides
            overrides.append({"node": nid, **rec["overrides"]})
        if "proof" in rec:
            proofs.append({"node": nid, **rec["proof"]})
        if "generation" in rec:  # generate nodes: text, rail verdicts, token counts, seed (replay reads these)
            generations.append({"node": nid, **rec["generation"]})
    skipped_models = [s.node.id for s in ctx.states.values() if s.node.type == "model" and s.status == SKIPPED]
    ends = [at_node] if at_node else [n.id for n in p.nodes_of("output")]
    derivations = []
    for end in ends:
        if end not in ctx.states:
            continue
        wanted = set(targets) if targets else _templates_read(ctx, end)
        for f in ctx.incoming_facts(end):
            if f.template in wanted:
                derivations.append(_origin(ctx, end, f, 0, set()))
    expl = {
        "pipeline": {"name": p.name, "version": ctx.version},
        "nodes": nodes,
        "gates": gates,
        "model_calls": calls,
        "skipped_models": skipped_models,
        "overrides": overrides,
        "proofs": proofs,
        "derivations": derivations,
    }
    if generations:
        expl["generations"] = generations
    expl["summary"] = summary_lines(expl)
    return expl


def derivations(ctx: RunContext, at_node: str, targets: Iterable[str]) -> list[dict[str, Any]]:
    """Derivation trees of the facts of `targets` templates arriving at `at_node`."""
    wanted = set(targets)
    return [_origin(ctx, at_node, f, 0, set()) for f in ctx.incoming_facts(at_node) if f.template in wanted]


def _ms(s: float | None) -> float | None:
    return None if s is None else round(s * 1000.0, 3)


def _templates_read(ctx: RunContext, node_id: str) -> set[str]:
    """Templates an output node's fields read (bare names and string arguments of fact functions)."""
    memo = ctx.plan.memo.get(("templates_read", node_id))
    if memo is not None:
        return memo
    node = ctx.pipeline.nodes[node_id]
    out: set[str] = set()
    import ast

    for spec in (node.get("fields") or {}).values():
        expr = spec.get("expr") if isinstance(spec, dict) else spec
        try:
            c = compile_expression(expr, FACT_FUNCTIONS)
        except Exception:
            continue
        out |= set(c.names)
        for n in ast.walk(c.tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FACT_FUNCTIONS:
                out |= {a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    ctx.plan.memo[("templates_read", node_id)] = out
    return out


def _origin(ctx: RunContext, node_id: str, f: Fact, depth: int, seen: set) -> dict[str, Any]:
    """Where a fact arriving at `node_id` came from: the upstream node that emitted it."""
    key = ctx.key(f)
    for e in ctx.incoming(node_id):
        if not ctx.active(e):
            continue
        src = ctx.states[e.source]
        if key not in ctx.keys_of(e.source):
            continue
        t = src.node.type
        if t in FORWARD_TYPES:
            fid = ctx.wm_id(src.node.id, key)
            if fid is not None:
                return _derive(ctx, src.node.id, fid, depth, seen)
        if t == "model":
            c = src.record.get("call", {})
            return {
                "fact": ctx.text(f),
                "node": src.node.id,
                "source": "model",
                "model": c.get("model"),
                "version": c.get("version"),
                "batch_size": c.get("batch_size"),
            }
        if t == "input":
            return {"fact": ctx.text(f), "node": src.node.id, "source": "input"}
        if t == "goal":
            return {"fact": ctx.text(f), "node": src.node.id, "source": "goal", "proof": src.record.get("proof")}
        return (
            _origin(ctx, src.node.id, f, depth + 1, seen)
            if depth < MAX_DEPTH
            else {"fact": ctx.text(f), "node": src.node.id, "source": "unknown", "note": "derivation too deep to show"}
        )
    return {"fact": ctx.text(f), "node": node_id, "source": "unknown"}


def _derive(ctx: RunContext, node_id: str, fid: int, depth: int, seen: set) -> dict[str, Any]:
    """Derivation of fact `fid` in the working memory of forward node `node_id`."""
    st = ctx.states[node_id]
    rec = st.record
    f = st.wm.get(fid)
    if f is None:  # retracted during the run: its last version, when the run recorded versions
        gone = version_at(rec.get("versions"), fid, None)
        text = ctx.text(gone) if gone is not None else f"f-{fid}"
    else:
        text = ctx.text(f)
    out: dict[str, Any] = {"fact": text, "fact_id": fid, "node": node_id, "knowledge_base": rec.get("knowledge_base")}
    firing = ctx.asserting_firing(node_id, fid)  # the last assert of this id made the fact as it is now
    if (node_id, fid) in seen or depth >= MAX_DEPTH:
        out["source"] = "rule" if firing is not None else "given"
        out["note"] = "derivation shown above" if (node_id, fid) in seen else "derivation too deep to show"
        return out
    seen = seen | {(node_id, fid)}
    if firing is not None:
        out["source"] = "rule"
        out["rule"] = firing["rule"]
        out["firing"] = firing["index"]
        k = firing["index"]
        premises = out["premises"] = []
        for x in firing["facts"]:
            latest = ctx.asserting_firing(node_id, x)
            if latest is not None and latest["index"] >= k:  # modified by firing k or later: it matched
                premises.append(_earlier_version(ctx, node_id, x, firing, latest, depth + 1, seen))
            else:
                premises.append(_derive(ctx, node_id, x, depth + 1, seen))
        return out
    if fid in rec.get("input_ids", ()) and f is not None:
        sent = rec.get("given_as_sent", {}).get(fid, f)  # the upstream node's fact (None slots left to defaults)
        return {**_origin(ctx, node_id, sent, depth + 1, seen), "fact": text}
    out["source"] = "deffacts" if f is not None else "given"
    return out


def _earlier_version(
    ctx: RunContext, node_id: str, fid: int, matched_by: dict[str, Any], latest: dict[str, Any], depth: int, seen: set
) -> dict[str, Any]:
    """Fact `fid` as firing `matched_by` matched it, when that firing or a later one modified it (a CLIPS
    `modify` keeps the fact index, so the modifying firing has the fact's earlier version among its
    premises). Says what made that version (the last firing before, or the fact as given) and stops
    there: a version's own history is not expanded (it would repeat for every version of the fact).
    Its content is shown when it is the fact as given, or when the run recorded fact versions (a run asked
    to explain does: `ForwardResult.versions`); else null (the trace keeps fact ids)."""
    st = ctx.states[node_id]
    rec = st.record
    k = matched_by["index"]
    if fid in matched_by["asserted"]:
        note = f"earlier version, matched and modified by firing #{k}"
    else:
        note = f"earlier version, matched by firing #{k}, modified by firing #{latest['index']}"
    firings = rec["firings"]
    made = next((firings[i] for i in range(k - 1, -1, -1) if fid in firings[i]["asserted"]), None)
    version = version_at(rec.get("versions"), fid, k)
    text = ctx.text(version) if version is not None else None
    out: dict[str, Any] = {"fact": text, "fact_id": fid, "node": node_id, "knowledge_base": rec.get("knowledge_base")}
    if made is not None:
        out.update(source="rule", rule=made["rule"], firing=made["index"], note=f"{note}; its history not expanded")
        return out
    given = rec.get("given_modified", {}).get(fid)  # a given fact a firing modified: its content as given
    if given is not None:
        return {**_origin(ctx, node_id, given, depth, seen), "fact": ctx.text(given), "note": note}
    out.update(source="given", note=note)
    return out


def summary_lines(expl: dict[str, Any]) -> list[str]:
    """A few sentences a person reads first (gates, model calls, overrides, rules behind outputs)."""
    lines: list[str] = []
    for g in expl["gates"]:
        rules = sorted({d.get("rule") for d in g["because"] if d.get("rule")})
        by = f" by rule {', '.join(rules)}" if rules else (" (default branch)" if g["default_used"] else "")
        lines.append(f"gate {g['node']} chose {', '.join(g['branches']) or 'no branch'}{by}")
    for m in expl["skipped_models"]:
        lines.append(f"model node {m} was skipped (not called)")
    for c in expl["model_calls"]:
        lines.append(
            f"model {c['model']}@{(c['version'] or '')[:12]} (node {c['node']}, batch of {c['batch_size']}) gave "
            f"{_some_facts(c['facts'])}"
        )
    for o in expl["overrides"]:
        if o["removed"]:
            lines.append(f"{o['node']} overrode {'; '.join(o['removed'])} with {'; '.join(o['added']) or 'nothing'}")
    for d in expl["derivations"]:
        if d.get("rule"):
            lines.append(f"{d['fact']} by rule {d['rule']} in {d['node']}")
    return lines


SUMMARY_FACTS = 3  # facts named per summary line; the full list stays in `model_calls`


def _some_facts(facts: list[str]) -> str:
    """`no facts`, the facts, or the first few and how many more (a summary line stays readable)."""
    if not facts:
        return "no facts"
    if len(facts) <= SUMMARY_FACTS:
        return "; ".join(facts)
    return f"{len(facts)} facts: {'; '.join(facts[:SUMMARY_FACTS])} (+{len(facts) - SUMMARY_FACTS} more)"
