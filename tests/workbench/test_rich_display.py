"""Rich display in notebooks and terminals: `_repr_html_` and `__rich__` of run and reasoner results."""

from __future__ import annotations

import io
from html.parser import HTMLParser
from pathlib import Path

from rich.console import Console

import rules
from chaining.forward import EngineConfig, ForwardEngine
from rules import Fact
from workbench import Pipeline, Workbench

KB = Path(__file__).resolve().parents[1].parent / "knowledge_bases"


class _Checker(HTMLParser):
    """Collects the text and checks that every opened tag is closed in order."""

    VOID = {"br", "hr", "img"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _check_html(html: str) -> str:
    p = _Checker()
    p.feed(html)
    p.close()
    assert p.stack == [], p.stack
    return "".join(p.text)


def _rich_text(obj) -> str:
    console = Console(record=True, width=100, file=io.StringIO())
    console.print(obj)
    return console.export_text()


def test_run_result_display(tmp_path):
    p = Pipeline("echo")
    p.add_node("req", "input", schema={"type": "object"})
    p.add_node("out", "output", fields={"text": "input.text"})
    p.connect("req", "out")
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "n.yaml") as wb:
        result = wb.run_sync(p, {"text": "<script>alert(1)</script>"}, explain=True)
    html = result._repr_html_()
    assert "<script>" not in html  # values are escaped
    text = _check_html(html)
    assert "<script>alert(1)</script>" in text and "succeeded" in text and "echo@" in text
    shown = _rich_text(result)
    assert "outputs" in shown and "<script>alert(1)</script>" in shown and "versions" in shown


def test_forward_result_display():
    kb = rules.load_knowledge_base(KB / "animals.clp")
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        result = engine.evaluate(
            [
                Fact("observation", {"attribute": "hair", "value": "yes"}),
                Fact("observation", {"attribute": "eats-meat", "value": "yes"}),
                Fact("observation", {"attribute": "markings", "value": "black-stripes"}),
                Fact("observation", {"attribute": "colour", "value": "tawny"}),
            ]
        )
    finally:
        engine.close()
    text = _check_html(result._repr_html_())
    assert "identified: tiger" in text and "mammal-by-hair" in text and "(identified (animal tiger))" in text
    shown = _rich_text(result)
    assert "firings" in shown and "carnivore-by-diet" in shown and "(identified (animal tiger))" in shown


def test_proof_result_display():
    from chaining.backward import Session

    kb = rules.load_knowledge_base(KB / "family.clp")
    result = Session(kb).prove_sync("(ancestor ?x otto)", limit=None)
    assert result.answers
    text = _check_html(result._repr_html_())
    assert "(ancestor ?x otto)" in text and "?x = dora" in text and "proof of answer 1" in text
    shown = _rich_text(result)
    assert "answers" in shown and "?x = dora" in shown and "proof of answer 1" in shown


def test_a_deep_proof_displays_without_recursion():
    from chaining.backward import Session

    n = 3000
    text = "\n".join(
        ["(deftemplate edge (slot a) (slot b))", "(deftemplate path (slot a) (slot b))"]
        + ["(defrule step (edge (a ?x) (b ?y)) => (assert (path (a ?x) (b ?y))))"]
        + ["(defrule hop (edge (a ?x) (b ?y)) (path (a ?y) (b ?z)) => (assert (path (a ?x) (b ?z))))"]
        + [f"(deffacts chain {' '.join(f'(edge (a n{i}) (b n{i + 1}))' for i in range(n))})"]
    )
    kb = rules.knowledge_base_from_text("chain", text)
    result = Session(kb).prove_sync(f"(path (a n0) (b n{n}))", limit=1)
    assert result.answers
    assert "..." in _check_html(result._repr_html_())
    assert "..." in _rich_text(result)
    assert repr(result.answers[0].proof).startswith("Proof('(path (a n0) (b n3000))  by rule hop', premises=2)")
    assert "ProofResult(" in repr(result)  # the generated repr recursed through every premise


def test_an_explanation_displays_itself_and_serialises_as_a_plain_dict(tmp_path):
    """Spec gap: `RunResult.explanation` was a plain dict with no display of its own."""
    import json
    import pickle

    from workbench.pipeline.result import Explanation
    from workbench.store import Store

    p = Pipeline("animals")
    p.add_node("req", "input", schema={"type": "object"})
    p.add_node("out", "output", fields={"text": "input.text"})
    p.connect("req", "out")
    db = tmp_path / "runs.sqlite3"
    with Workbench(
        knowledge_base_dir=tmp_path,
        pipeline_dir=tmp_path / "p",
        model_catalog=tmp_path / "n.yaml",
        store=Store.open(f"sqlite:///{db}"),
    ) as wb:
        result = wb.run_sync(p, {"text": "<b>x</b>"}, explain=True)
        stored = wb.get_run(result.run_id)
    expl = result.explanation
    assert isinstance(expl, Explanation) and isinstance(stored.explanation, Explanation)
    plain = dict(expl)
    assert json.dumps(expl, sort_keys=True) == json.dumps(plain, sort_keys=True)  # serialised as before
    assert json.loads(json.dumps(result.to_dict()))["explanation"] == plain
    assert stored.explanation == plain and pickle.loads(pickle.dumps(expl)) == plain
    html = expl._repr_html_()
    text = _check_html(html)
    assert "why: animals @" in text and "explanation tree" in text
    assert "why: animals @" in _rich_text(expl)
    assert "why: animals @" in _rich_text(result)  # RunResult shows the explanation tree as before
