"""`ExplanationTree`: a run's explanation as an expandable tree.

Reads the JSON the executor records (docs/pipelines.md, `workbench.pipeline.explanation`):
summary lines, gate decisions, model calls (model, version, batch size, queue and compute
time), skipped models, overrides, proofs and fact derivations (rule firings down to model
outputs, run input or deffacts). Unknown sections are shown as plain JSON trees.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from workbench.derivation import derivation_label

from .proof_format import proof_label, proof_premises

KNOWN = (
    "summary",
    "gates",
    "model_calls",
    "skipped_models",
    "overrides",
    "proofs",
    "derivations",
    "nodes",
    "pipeline",
    "explain_nodes",
)


class ExplanationTree(Tree[Any]):
    """Tree view of one explanation; `show(explanation)` replaces what is shown."""

    def process_label(self, label: str | Text) -> Text:
        """Labels are data (facts, file names), never markup."""
        return super().process_label(Text(label) if isinstance(label, str) else label)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("Explanation", **kwargs)
        self.show_root = False
        self.guide_depth = 2

    def show(self, explanation: dict[str, Any] | None) -> None:
        """Build the tree (summary, gates, model calls and derivations expanded one level)."""
        self.clear()
        root = self.root
        if not explanation:
            root.add_leaf(Text("no explanation recorded", style="dim"))
            root.expand()
            return
        summary = explanation.get("summary") or []
        if summary:
            node = root.add("Summary", expand=True)
            for line in summary:
                node.add_leaf(line)
        gates = explanation.get("gates") or []
        if gates:
            node = root.add(f"Gate decisions ({len(gates)})", expand=True)
            for g in gates:
                label = Text(
                    f"{g.get('node')} chose {', '.join(g.get('branches') or []) or 'no branch'}", style="bold yellow"
                )
                if g.get("default_used"):
                    label.append("  (default branch)", style="dim")
                gate = node.add(label, expand=True)
                for d in g.get("because") or []:
                    self._derivation(gate, d)
        calls = explanation.get("model_calls") or []
        skipped = explanation.get("skipped_models") or []
        if calls or skipped:
            node = root.add(f"Model calls ({len(calls)})", expand=True)
            for c in calls:
                label = Text(f"{c.get('model')}@{str(c.get('version') or '')[:12]}", style="bold magenta")
                label.append(
                    f"  node {c.get('node')} · batch {c.get('batch_size')} · queue {c.get('queue_ms')} ms · compute "
                    f"{c.get('compute_ms')} ms",
                    style="dim",
                )
                call = node.add(label)
                for f in c.get("facts") or []:
                    call.add_leaf(f"→ {f}")
            for m in skipped:
                node.add_leaf(Text(f"{m}: skipped by a gate (not called)", style="dim"))
        overrides = explanation.get("overrides") or []
        if overrides:
            node = root.add(f"Overrides ({len(overrides)})", expand=True)
            for o in overrides:
                item = node.add(f"node {o.get('node')}", expand=True)
                for f in o.get("removed") or []:
                    item.add_leaf(Text(f"− {f}", style="red"))
                for f in o.get("added") or []:
                    item.add_leaf(Text(f"+ {f}", style="green"))
        proofs = explanation.get("proofs") or []
        if proofs:
            node = root.add(f"Proofs ({len(proofs)})", expand=True)
            for p in proofs:
                self._proof(node, p)
        derivations = explanation.get("derivations") or []
        if derivations:
            node = root.add(f"Derivations ({len(derivations)})", expand=True)
            for d in derivations:
                self._derivation(node, d)
        nodes = explanation.get("nodes") or []
        if nodes:
            node = root.add(f"Nodes ({len(nodes)})")
            for n in nodes:
                reason = f" — {n['reason']}" if n.get("reason") else ""
                node.add_leaf(f"{n.get('id')} · {n.get('type')} · {n.get('status')}{reason}")
        for node_id, value in (explanation.get("explain_nodes") or {}).items():  # each explain node's targets
            value = value if isinstance(value, dict) else {}
            targets = ", ".join(str(t) for t in value.get("targets") or ()) or "every fact reaching it"
            found = value.get("derivations") or []
            node = root.add(f"Explain node {node_id}: {targets} ({len(found)})")
            for d in found:
                self._derivation(node, d)
        for key, value in explanation.items():
            if key not in KNOWN:
                self._json(root.add(str(key)), value)
        root.expand()

    def _proof(self, parent: TreeNode[Any], p: dict[str, Any]) -> None:
        """A goal node's record: goal, knowledge base, proved, answers with their proof trees."""
        answers = p.get("answers") or []
        verdict = f"proved, {len(answers)} answer(s)" if p.get("proved") else "not proved"
        label = Text(f"{p.get('goal')}", style="bold blue")
        label.append(f"  {verdict} · node {p.get('node')} · {p.get('knowledge_base')}", style="dim")
        goal = parent.add(label, expand=True)
        for answer in answers:
            bindings = " ".join(f"?{k}={v}" for k, v in (answer.get("bindings") or {}).items()) or "(proved)"
            self._proof_tree(goal.add(bindings, expand=True), answer.get("proof"))

    def _proof_tree(self, parent: TreeNode[Any], proof: Any) -> None:
        """A proof as nested tree nodes, built without recursion (a proof can be thousands of
        levels deep). The part a deep proof keeps as flat `continued` steps is added collapsed:
        expanded on demand, it does not make every render walk a thousand levels."""
        work: list[tuple[TreeNode[Any], Any, bool]] = [(parent, proof, True)]
        while work:
            at, p, expand = work.pop()
            if not isinstance(p, dict):
                at.add_leaf(str(p))
                continue
            premises = proof_premises(p)
            if not premises:
                at.add_leaf(proof_label(p))
                continue
            deeper = expand and not p.get("premises")  # the nesting stopped here: the rest collapsed
            node = at.add(proof_label(p), expand=expand and not deeper)
            work.extend((node, child, expand and not deeper) for child in reversed(premises))

    def _derivation(self, parent: TreeNode[Any], d: Any) -> None:
        if not isinstance(d, dict):
            parent.add_leaf(str(d))
            return
        children = d.get("premises") or []
        if d.get("proof"):
            self._proof(parent.add(derivation_label(d), expand=True), {**d["proof"], "node": d.get("node")})
            return
        if children:
            node = parent.add(derivation_label(d), expand=True)
            for child in children:
                self._derivation(node, child)
        else:
            parent.add_leaf(derivation_label(d))

    def _json(self, parent: TreeNode[Any], value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)) and v:
                    self._json(parent.add(str(k)), v)
                else:
                    parent.add_leaf(f"{k}: {v}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, (dict, list)) and v:
                    self._json(parent.add(f"[{i}]"), v)
                else:
                    parent.add_leaf(str(v))
        else:
            parent.add_leaf(str(value))
