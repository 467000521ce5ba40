"""Replay: what changed between a recorded run and its re-run (outputs, gates, rule firings, versions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .result import RunResult


@dataclass(slots=True)
class ReplayResult:
    """`original` and `replay` runs and `changes`: `{"outputs": {field: {"before", "after"}}, "status",
    "gates": {node: {"before", "after"}}, "rules": {node: {"added": [...], "removed": [...]}},
    "knowledge_base_versions": {name: {"before", "after"}}}` (only what differs)."""

    original: RunResult
    replay: RunResult
    changes: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.changes.get("outputs") or self.changes.get("status"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "original": self.original.to_dict(),
            "replay": self.replay.to_dict(),
            "changes": self.changes,
            "changed": self.changed,
        }


def _by_node(trace: list[dict[str, Any]], kind: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in trace:
        if e["kind"] == kind:
            out.setdefault(e["node"], []).append(e["payload"])
    return out


def diff_runs(
    before: RunResult, after: RunResult, trace_before: list[dict[str, Any]], trace_after: list[dict[str, Any]]
) -> dict[str, Any]:
    """The differences between two runs of the same input (see ReplayResult)."""
    changes: dict[str, Any] = {}
    if before.status != after.status:
        changes["status"] = {"before": before.status, "after": after.status, "error": after.error}
    ob, oa = before.outputs or {}, after.outputs or {}
    outs = {k: {"before": ob.get(k), "after": oa.get(k)} for k in sorted(set(ob) | set(oa)) if ob.get(k) != oa.get(k)}
    if outs:
        changes["outputs"] = outs
    gb, ga = _by_node(trace_before, "gate_decision"), _by_node(trace_after, "gate_decision")
    gates = {}
    for node in sorted(set(gb) | set(ga)):
        b = gb.get(node, [{}])[-1].get("branches")
        a = ga.get(node, [{}])[-1].get("branches")
        if a != b:
            gates[node] = {"before": b, "after": a}
    if gates:
        changes["gates"] = gates
    rb, ra = _by_node(trace_before, "rule_firing"), _by_node(trace_after, "rule_firing")
    rules = {}
    for node in sorted(set(rb) | set(ra)):
        b = [p["rule"] for p in rb.get(node, [])]
        a = [p["rule"] for p in ra.get(node, [])]
        if a != b:
            rules[node] = {
                "before": b,
                "after": a,
                "added": sorted(set(a) - set(b)),
                "removed": sorted(set(b) - set(a)),
            }
    if rules:
        changes["rules"] = rules
    kb = {
        k: {"before": before.knowledge_base_versions.get(k), "after": after.knowledge_base_versions.get(k)}
        for k in sorted(set(before.knowledge_base_versions) | set(after.knowledge_base_versions))
        if before.knowledge_base_versions.get(k) != after.knowledge_base_versions.get(k)
    }
    if kb:
        changes["knowledge_base_versions"] = kb
    skipped = {"before": before.skipped, "after": after.skipped}
    if before.skipped != after.skipped:
        changes["skipped"] = skipped
    return changes


def changes_table(changes: dict[str, Any]) -> list[dict[str, str]]:
    """The changes of a replay as rows `{"what", "before", "after"}` (text), in the order a person
    reads them: outputs, status, gate branches, rules fired per node, knowledge-base versions.
    One row `(nothing changed)` when nothing differs."""
    import json

    def show(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, default=str)

    rows = [
        {"what": f"output {k}", "before": show(v.get("before")), "after": show(v.get("after"))}
        for k, v in (changes.get("outputs") or {}).items()
    ]
    if changes.get("status"):
        status = changes["status"]
        rows.append({"what": "status", "before": str(status.get("before")), "after": str(status.get("after"))})
    rows += [
        {"what": f"gate {node}", "before": show(v.get("before")), "after": show(v.get("after"))}
        for node, v in (changes.get("gates") or {}).items()
    ]
    rows += [
        {
            "what": f"rules in {node}",
            "before": ", ".join(v.get("removed") or []) or "-",
            "after": ", ".join(v.get("added") or []) or "-",
        }
        for node, v in (changes.get("rules") or {}).items()
    ]
    rows += [
        {"what": f"kb {name}", "before": str(v.get("before"))[:12], "after": str(v.get("after"))[:12]}
        for name, v in (changes.get("knowledge_base_versions") or {}).items()
    ]
    return rows or [{"what": "(nothing changed)", "before": "", "after": ""}]


def recorded_knowledge_base(workbench: Any, run_id: str, name: str) -> dict[str, Any]:
    """The rules of knowledge base `name` as recorded run `run_id` used them (the start of a replay
    edit): `{"run_id", "name", "version", "text", "recorded"}`; `recorded` is False when that
    version is not in the store and `text` is the current rule text.

    Raises RunNotFoundError; KnowledgeBaseNotFoundError when the run did not use `name`."""
    from .errors import KnowledgeBaseNotFoundError

    run = workbench.get_run(run_id)
    versions = run.knowledge_base_versions or {}
    if name not in versions:
        used = ", ".join(sorted(versions)) or "(none)"
        raise KnowledgeBaseNotFoundError(name, f"run {run.run_id} did not use it; it used: {used}")
    version = versions[name]
    row = workbench.store.get_knowledge_base(name, version)
    if row is not None:
        text, recorded = "\n".join(t for _, t in row.sources), True
    else:
        text, recorded = workbench.get_knowledge_base(name).text, False
    return {"run_id": run.run_id, "name": name, "version": version, "text": text, "recorded": recorded}
