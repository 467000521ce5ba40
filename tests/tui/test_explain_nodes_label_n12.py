"""The Run screen's explanation tree showed a pipeline's explain nodes under the internal key
`explain_nodes` as raw JSON (`[0]`, `fact: ...`); each explain node is now a section named after the
node, with its targets and its derivations drawn as the Derivations section draws them."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tui.widgets.explanation_tree import ExplanationTree

DERIVATION = {
    "fact": "(alert (name w) (level low))",
    "fact_id": 5,
    "node": "r",
    "knowledge_base": "inv",
    "source": "rule",
    "rule": "low-stock",
    "firing": 0,
    "premises": [{"fact": "(item (name w) (qty 2))", "node": "in", "source": "input"}],
}


async def test_explain_nodes_are_sections_named_after_the_node() -> None:
    class One(App):
        def compose(self) -> ComposeResult:
            yield ExplanationTree()

    app = One()
    async with app.run_test() as pilot:
        tree = app.query_one(ExplanationTree)
        tree.show(
            {"derivations": [DERIVATION], "explain_nodes": {"why": {"targets": ["alert"], "derivations": [DERIVATION]}}}
        )
        await pilot.pause()
        labels = [str(c.label) for c in tree.root.children]
        assert labels == ["Derivations (1)", "Explain node why: alert (1)"]
        (section,) = [c for c in tree.root.children if str(c.label).startswith("Explain node")]
        (derivation,) = section.children
        assert str(derivation.label) == str(tree.root.children[0].children[0].label)  # drawn as Derivations draws it
        assert str(derivation.children[0].label).startswith("(item (name w) (qty 2))")
