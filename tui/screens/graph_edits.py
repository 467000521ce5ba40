"""Pure helpers of the pipeline editor: which edges keep the graph acyclic, a gate's branch names,
and an undo history of documents. Plain data in, plain data out (tested without a screen)."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]


def reaches(doc: JSON, start: str) -> set[str]:
    """Every node reachable from `start` along the document's edges (including `start`)."""
    out_edges: dict[str, list[str]] = {}
    for e in doc.get("edges", []):
        out_edges.setdefault(str(e.get("from")), []).append(str(e.get("to")))
    seen, todo = {start}, [start]
    while todo:
        for nxt in out_edges.get(todo.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def acyclic_targets(doc: JSON, source: str) -> list[str]:
    """Nodes `source` may get a new edge to: not itself, not already a target, and not a node from
    which `source` is reachable (that edge would close a cycle). In document order."""
    have = {e.get("to") for e in doc.get("edges", []) if e.get("from") == source}
    ids = [str(n["id"]) for n in doc.get("nodes", [])]
    # a node `t` closes a cycle when `source` is reachable from `t`
    return [t for t in ids if t != source and t not in have and source not in reaches(doc, t)]


def gate_branches(doc: JSON, gate: str) -> list[str]:
    """Branch names a gate is known to choose: the `when` of its edges and its `default`, sorted."""
    names = {str(e["when"]) for e in doc.get("edges", []) if e.get("from") == gate and e.get("when")}
    node = next((n for n in doc.get("nodes", []) if n.get("id") == gate), {})
    if node.get("default"):
        names.add(str(node["default"]))
    return sorted(names)


def node_type(doc: JSON, node_id: str | None) -> str | None:
    node = next((n for n in doc.get("nodes", []) if n.get("id") == node_id), None)
    return None if node is None else node.get("type")


class History:
    """Undo for graph edits: `push(doc, what)` before a change, `undo()` returns the document as it
    was and what the change was. Bounded (`limit` steps)."""

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit
        self.steps: list[tuple[JSON, str]] = []

    def push(self, doc: JSON, what: str) -> None:
        self.steps.append((copy.deepcopy(doc), what))
        del self.steps[: -self.limit]

    def undo(self) -> tuple[JSON, str] | None:
        return self.steps.pop() if self.steps else None

    def clear(self) -> None:
        self.steps.clear()

    def __len__(self) -> int:
        return len(self.steps)
