"""A proof deeper than the nested JSON keeps (100 levels, the rest as flat `continued` steps) is
shown whole: the TUI's explanation tree and the HOW lines used to stop at the 100th level."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult

import rules
from chaining.backward import Session
from chaining.backward.proof import NESTED_PROOF_DEPTH
from tui.widgets.explanation_tree import ExplanationTree
from workbench.consultation import how_lines, proof_premises


def _chain_kb(tmp_path: Path, n: int) -> rules.KnowledgeBase:
    edges = "\n".join(f"  (edge n{i} n{i + 1})" for i in range(n - 1))
    (tmp_path / "chain.clp").write_text(
        f"(deffacts g\n{edges})\n(defrule p-edge (edge ?x ?y) => (assert (path ?x ?y)))\n"
        "(defrule p-step (edge ?x ?z) (path ?z ?y) => (assert (path ?x ?y)))\n"
    )
    return rules.load_knowledge_base([tmp_path / "chain.clp"])


def _walk(node):
    """(label, depth, expanded) of every node below `node`, depth first, without recursion."""
    out, stack = [], [(c, 1) for c in reversed(node.children)]
    while stack:
        n, depth = stack.pop()
        out.append((str(n.label), depth, n.is_expanded))
        stack.extend((c, depth + 1) for c in reversed(n.children))
    return out


def test_how_lines_follow_the_continued_steps(tmp_path: Path) -> None:
    proof = Session(_chain_kb(tmp_path, 300)).prove_sync("(path n0 n299)").answers[0].proof
    shallow, full = proof.to_dict(), proof.to_dict(max_nesting=10_000)
    assert "continued" not in str(full.keys())
    lines = how_lines(shallow)
    assert lines == how_lines(full) and len(lines) == 2 * 299  # every path node and every edge fact
    assert lines[-1].strip() == "└ (edge n298 n299)  given (f-299 deffacts)"
    deepest = shallow
    for _ in range(NESTED_PROOF_DEPTH):
        deepest = deepest["premises"][-1]
    assert deepest["premises"] == [] and len(proof_premises(deepest)) == 2


async def test_explanation_tree_shows_the_continued_part_collapsed(tmp_path: Path) -> None:
    proof = Session(_chain_kb(tmp_path, 300)).prove_sync("(path n0 n299)").answers[0].proof
    explanation = {
        "proofs": [
            {
                "goal": "(path n0 n299)",
                "node": "prove",
                "knowledge_base": "chain",
                "proved": True,
                "answers": [{"bindings": {}, "proof": proof.to_dict()}],
            }
        ]
    }

    class One(App):
        def compose(self) -> ComposeResult:
            yield ExplanationTree()

    app = One()
    async with app.run_test() as pilot:
        tree = app.query_one(ExplanationTree)
        tree.show(explanation)
        await pilot.pause()
        nodes = _walk(tree.root)
        proof_nodes = nodes[3:]  # "Proofs (1)", the goal, the answer's bindings
        assert len(proof_nodes) == 2 * 299
        assert proof_nodes[-1][0] == "(edge n298 n299)  given (f-299 deffacts)"
        assert (
            max(depth for _, depth, _ in proof_nodes) == 4 + 299
        )  # the root proof node at depth 4, the last edge 299 levels below
        # nested part expanded as before; from the node where the JSON nesting stopped, collapsed
        cut = [(label, exp) for label, depth, exp in proof_nodes if depth == 4 + NESTED_PROOF_DEPTH and "path" in label]
        assert cut == [(f"(path n{NESTED_PROOF_DEPTH} n299)  by rule p-step", False)]
