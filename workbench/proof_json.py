"""Proof trees as JSON (`Proof.to_dict`) read back for display: a node's label, its premises (deep proofs
keep their lower levels as flat `"continued"` steps) and the HOW lines of a whole tree. Used by consultations,
the API's tool routes and the TUI."""

from __future__ import annotations

from typing import Any


def proof_label(node: dict[str, Any]) -> str:
    """One line for a node of a proof tree as JSON: the label the prover wrote (`Proof.label`)."""
    return str(node.get("label") or node.get("fact") or node.get("detail") or node.get("kind") or "")


def proof_premises(node: dict[str, Any]) -> list[Any]:
    """The premises of a proof node as JSON (`Proof.to_dict`): its nested `"premises"`, or, for the
    node where the nesting stopped (`"continued": {"steps", "root"}`, more than 100 levels down),
    its premises rebuilt as nested dicts from the flat steps (steps list premises before their
    conclusions, so one pass, no recursion; a step used twice is one shared dict)."""
    cont = node.get("continued")
    if not node.get("premises") and isinstance(cont, dict) and cont.get("steps"):
        built: list[dict[str, Any]] = []
        for step in cont["steps"]:
            d = {k: v for k, v in step.items() if k not in ("id", "premises")}
            d["premises"] = [built[i] for i in step.get("premises") or ()]
            built.append(d)
        return built[cont.get("root", len(built) - 1)]["premises"]
    return node.get("premises") or []


def how_lines(proof: Any) -> list[str]:
    """A proof tree (JSON) as indented lines, each premise under its conclusion (HOW), including
    what a deep proof keeps in `"continued"` steps; built without recursion, since a proof can be as
    deep as the prover's depth limit."""
    lines: list[str] = []
    stack = [(proof, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            lines.append(f"{'  ' * depth}{node}")
            continue
        lines.append(f"{'  ' * depth}{'└ ' if depth else ''}{proof_label(node)}")
        stack.extend((child, depth + 1) for child in reversed(proof_premises(node)))
    return lines
