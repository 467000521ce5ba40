"""Proof trees of the backward prover (its JSON: kind, fact, source, rule, detail, certainty,
premises) as text lines — the HOW explanation on the Ask screen and in run explanations."""

from __future__ import annotations

from typing import Any


def proof_label(node: dict[str, Any]) -> str:
    """One line for a proof node (the backward prover's JSON: kind, fact, source, rule, detail, certainty)."""
    cf = f" [cf {node['certainty']:.4g}]" if isinstance(node.get("certainty"), (int, float)) else ""
    kind, fact = node.get("kind"), node.get("fact", "")
    if kind == "fact":
        fid = f"f-{node['fact_id']} " if node.get("fact_id") is not None else ""
        return f"{fact}  given ({fid}{node.get('source')}){cf}"
    if kind == "asked":
        return f"{fact}  answered by {node.get('source')}: {node.get('detail')}{cf}"
    if kind == "rule":
        return f"{fact}  by rule {node.get('rule')}{cf}"
    if kind == "test":
        return f"(test {node.get('detail')}) is true"
    if kind == "not":
        return f"(not {node.get('detail')}): no proof exists"
    if kind in ("exists", "forall"):
        return f"({kind} {node.get('detail')})"
    return f"goal {node.get('detail') or fact}{cf}"


def render_proof(proof: Any, depth: int = 0) -> list[str]:
    """A proof tree as indented lines (HOW), children under their conclusion."""
    if not isinstance(proof, dict):
        return [f"{'  ' * depth}{proof}"]
    lines = [f"{'  ' * depth}{'└ ' if depth else ''}{proof_label(proof)}"]
    for child in proof.get("premises") or []:
        lines += render_proof(child, depth + 1)
    return lines
