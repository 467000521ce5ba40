"""One typed fact identity (rules.facts.fact_key) for the pipeline and the backward chainer: the
symbol `a` and the string "a" are different facts, as they are to CLIPS, so a post-process rule that
turns one into the other is reported as an override, while a value CLIPS merely types (a plain
JSON string landing in a STRING slot) is not."""

from __future__ import annotations

import asyncio

from chaining.backward import terms
from rules.facts import Fact, String, Symbol, fact_key, typed_value, value_key
from workbench import Pipeline, Workbench

RELABEL = """
(deftemplate label (slot value) (slot note (type STRING)))
(defrule to-string
  ?f <- (label (value ?v&:(symbolp ?v)))
  =>
  (modify ?f (value (str-cat ?v))))
"""

KEEP = """
(deftemplate label (slot value) (slot note (type STRING)))
(defrule nothing (label (value zzz)) => (printout t "never" crlf))
"""


def _overrides(tmp_path, kb_text: str, inputs: dict) -> list[dict]:
    kb = tmp_path / "kb"
    kb.mkdir(exist_ok=True)
    (kb / "fix.clp").write_text(kb_text)
    p = Pipeline("relabel")
    p.add_node(
        "req",
        "input",
        schema={"type": "object", "properties": {"v": {"type": "string"}, "note": {"type": "string"}}},
        facts=[{"template": "label", "slots": {"value": "input.v", "note": "input.note"}}],
    )
    p.add_node("fix", "postprocess", knowledge_base="fix")
    p.add_node("out", "output", fields={"value": "label.value"})
    p.chain("req", "fix", "out")
    with Workbench(knowledge_base_dir=kb, pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "none.yaml") as wb:
        assert wb.validate(p) == []
        r = asyncio.run(wb.run(p, inputs, explain=True))
        assert r.ok, r.error
        return r.explanation["overrides"]


def test_a_rule_turning_a_symbol_into_a_string_is_an_override(tmp_path):
    overrides = _overrides(tmp_path, RELABEL, {"v": "a", "note": "n"})
    assert overrides == [
        {"node": "fix", "removed": ['(label (value a) (note "n"))'], "added": ['(label (value "a") (note "n"))']}
    ]


def test_values_clips_only_types_are_not_overrides(tmp_path):
    # "n" is a symbol token but the note slot takes only strings; "Rex the dog" is no symbol token
    assert _overrides(tmp_path, KEEP, {"v": "Rex the dog", "note": "n"}) == []
    assert _overrides(tmp_path, KEEP, {"v": "rex", "note": "a note"}) == []


def test_one_typed_identity_for_pipeline_and_backward_chainer():
    assert terms.fact_key is fact_key and terms.vkey is value_key
    a_sym = Fact("label", {"value": Symbol("a")})
    a_str = Fact("label", {"value": String("a")})
    assert fact_key(a_sym) != fact_key(a_str)
    assert fact_key(Fact("label", {"value": "a"})) == fact_key(a_sym)  # a plain str is typed as CLIPS would
    assert fact_key(Fact("label", {"value": "a b"})) == fact_key(Fact("label", {"value": String("a b")}))
    assert fact_key(Fact("label", {"value": "a"}), {"value"}) == fact_key(a_str)  # a STRING-only slot
    assert fact_key(Fact("n", {"x": 1})) != fact_key(Fact("n", {"x": 1.0}))
    assert typed_value("123") == String("123") and type(typed_value("123")) is String  # not a symbol token
    assert terms.normalise_fact(Fact("label", {"value": "a b"})).slots["value"].__class__ is String


def test_fact_equality_is_the_typed_identity():
    a_sym, a_str = Fact("label", {"value": Symbol("a")}), Fact("label", {"value": String("a")})
    assert a_sym != a_str and len({a_sym, a_str, Fact("label", {"value": "a"})}) == 2
    assert Fact("label", {"value": "a"}, 3) != a_sym  # the working-memory id is part of equality
    assert Fact.ordered("p", 1, "x") == Fact.ordered("p", 1, Symbol("x")) != Fact.ordered("p", 1.0, "x")


def test_run_context_same_agrees_with_fact_key_on_every_pair():
    """`RunContext.same` (the cheap comparison used for every given fact of a forward node) is
    exactly `fact_key(a) == fact_key(b)`: typed values, multifields element by element, ids ignored."""
    from workbench.pipeline.context import RunContext

    values = [
        "a", Symbol("a"), String("a"), "two words", String("two words"), 1, 1.0, -0.0, 0.0, float("nan"),
        (1, 2.5), (1.0, 2.5), (Symbol("x"), 2.5), ("x", 2.5), (), (0.1,) * 10, (0.1,) * 9 + (0.2,),
    ]  # fmt: skip
    facts = [Fact("t", {"v": v}, id=i) for i, v in enumerate(values)]
    facts += [Fact("u", {"v": 1}), Fact("t", {"v": 1, "w": 2}), Fact("t", {})]
    pipeline = Pipeline("p")
    pipeline.add_node("x", "input")
    for a in facts:
        for b in facts + [Fact(f.template, f.slots) for f in facts]:
            ctx = RunContext(pipeline, {})
            assert ctx.same(a, b) == (fact_key(a) == fact_key(b)), (a, b)
            assert ctx.key(a) == fact_key(a) and ctx.key(b) == fact_key(b)  # a shared key stays right


def test_run_context_text_is_each_facts_own_text_on_every_pair():
    """`RunContext.text` shares a rendering between a fact and a copy `same` found equal (the
    working-memory copy read back from CLIPS) only when the texts are certainly the same: it must
    be `str(f)` for every fact, whichever was rendered first (0.0 == -0.0 but they read differently;
    a plain str and a Symbol of one token read the same)."""
    from workbench.pipeline.context import RunContext

    values = [
        "a", Symbol("a"), String("a"), "two words", String("two words"), 1, 1.0, -0.0, 0.0, float("nan"),
        (1, 2.5), (1.0, 2.5), (0.0, 2.5), (-0.0, 2.5), (0, 2.5), (Symbol("x"), 2.5), ("x", 2.5), (), (0.1,) * 10,
    ]  # fmt: skip
    facts = [Fact("t", {"v": v}, id=i) for i, v in enumerate(values)]
    pipeline = Pipeline("p")
    pipeline.add_node("x", "input")
    for a in facts:
        for b in facts + [Fact(f.template, f.slots) for f in facts]:
            for first in (a, b):
                ctx = RunContext(pipeline, {})
                ctx.text(first)
                ctx.same(a, b)
                assert (ctx.text(a), ctx.text(b)) == (str(a), str(b)), (a, b)
    ctx = RunContext(pipeline, {})
    copies = ctx.strip_ids(facts)
    assert [ctx.text(c) for c in copies] == [str(f) for f in facts]


def test_fact_mapping_builds_the_facts_fact_would():
    """The fact mapping skips `Fact`'s checks for values they would keep as they are; the facts are
    equal, slot types included, and what `Fact` refuses is still refused with the field named."""
    import pytest

    from workbench.pipeline.errors import NodeExecutionError
    from workbench.pipeline.nodes.mapping import map_facts

    scope = {"probs": [0.25, 0.75], "n": 3, "big": 2**63, "name": "a b", "flag": True, "mixed": [1, "x", 2.5]}
    slots = {"p": "probs", "n": "n", "s": "name", "f": "flag", "m": "mixed", "x": "n * 1.5"}
    (got,) = map_facts("m", "model", [{"template": "t", "slots": slots}], scope)
    want = Fact("t", {"p": (0.25, 0.75), "n": 3, "s": "a b", "f": "TRUE", "m": (1, "x", 2.5), "x": 4.5})
    assert fact_key(got) == fact_key(want) and str(got) == str(want) and got.id is None
    assert [type(v) for v in got.slots.values()] == [type(v) for v in want.slots.values()]
    with pytest.raises(NodeExecutionError, match=r"facts\[0\].*outside CLIPS's 64-bit range"):
        map_facts("m", "model", [{"template": "t", "slots": {"b": "big"}}], scope)
    with pytest.raises(NodeExecutionError, match=r"facts\[0\].*not a CLIPS symbol"):
        map_facts("m", "model", [{"template": "two words", "slots": {"n": "n"}}], scope)
