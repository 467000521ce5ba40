"""Parser round trips, positions, and agreement with real CLIPS on well-formed files."""

from __future__ import annotations

from pathlib import Path

import clips
import pytest

import rules
from rules import ast

WELLFORMED = sorted((Path(__file__).parent / "wellformed").glob("*.clp"))


def _walk(node):
    """Every AST node below `node` (dataclass fields, lists, dicts)."""
    yield node
    if isinstance(node, list):
        for x in node:
            yield from _walk(x)
    elif isinstance(node, dict):
        for x in node.values():
            yield from _walk(x)
    elif hasattr(node, "__dataclass_fields__") and not isinstance(node, ast.Pos):
        for name in node.__dataclass_fields__:
            yield from _walk(getattr(node, name))


@pytest.mark.parametrize("path", WELLFORMED, ids=lambda p: p.stem)
def test_round_trip(path: Path) -> None:
    module = rules.parse(path.read_text(), str(path))
    printed = rules.to_clips(module)
    again = rules.parse(printed, str(path))
    assert again.constructs == module.constructs
    assert rules.to_clips(again) == printed


@pytest.mark.parametrize("path", WELLFORMED, ids=lambda p: p.stem)
def test_clips_loads_original_and_printed_and_we_accept(path: Path, tmp_path: Path) -> None:
    assert rules.check_files([path]) == []
    env = clips.Environment()
    env.load(str(path))
    printed = tmp_path / path.name
    printed.write_text(rules.to_clips(rules.parse(path.read_text())))
    env2 = clips.Environment()
    env2.load(str(printed))
    assert sorted(r.name for r in env2.rules()) == sorted(r.name for r in env.rules())


def test_every_construct_and_element_is_modelled() -> None:
    """The corpus covers every construct and LHS element of issue 3 item 1, each as its own node type."""
    seen: set[str] = set()
    for path in WELLFORMED:
        for node in _walk(rules.parse(path.read_text()).constructs):
            seen.add(type(node).__name__)
            if isinstance(node, ast.Term):
                seen.add(f"term:{node.kind}" + (":negated" if node.negated else ""))
            if isinstance(node, ast.FieldConstraint) and len(node.alternatives) > 1:
                seen.add("or-connective")
            if isinstance(node, ast.FieldConstraint) and any(len(a) > 1 for a in node.alternatives):
                seen.add("and-connective")
            if isinstance(node, ast.Pattern) and node.address:
                seen.add("fact-address")
            if isinstance(node, ast.Atom):
                seen.add(f"atom:{node.kind}")
            if isinstance(node, ast.RuleDef) and node.salience != 0:
                seen.add("salience")
    needed = {
        "TemplateDef",
        "FactsDef",
        "RuleDef",
        "FunctionDef",
        "GlobalDef",
        "ModuleDef",
        "OpaqueConstruct",
        "Pattern",
        "Test",
        "Not",
        "Exists",
        "Forall",
        "Or",
        "And",
        "Logical",
        "Wildcard",
        "term:constant",
        "term:variable",
        "term:mf_variable",
        "term:predicate",
        "term:return_value",
        "term:constant:negated",
        "term:variable:negated",
        "or-connective",
        "and-connective",
        "fact-address",
        "salience",
        "atom:mf_variable",
        "atom:global",
        "atom:string",
        "atom:float",
        "atom:integer",
        "atom:instance_name",
    }
    assert needed <= seen, needed - seen


def test_positions_are_one_based_and_exact() -> None:
    text = "(deftemplate p (slot a))\n\n(defrule r\n   ?f <- (p (a ?x&:(> ?x 1)))\n   =>\n   (retract ?f))\n"
    m = rules.parse(text, "f.clp")
    rule = m.constructs[1]
    assert isinstance(rule, ast.RuleDef)
    assert (rule.pos.line, rule.pos.column, rule.pos.end_line) == (3, 1, 6)
    pat = rule.lhs[0]
    assert isinstance(pat, ast.Pattern)
    assert (pat.address_pos.line, pat.address_pos.column) == (4, 4)
    assert (pat.template_pos.line, pat.template_pos.column) == (4, 11)
    pred = pat.slots[0].fields[0].terms[1]
    assert pred.kind == "predicate" and (pred.value.pos.line, pred.value.pos.column) == (4, 20)
    assert rule.text == text[text.index("(defrule") :].rstrip("\n")


def test_reads_and_writes() -> None:
    kb = rules.knowledge_base_from_text(
        "rw",
        """
(deftemplate order (slot id) (slot state))
(deftemplate audit (slot id))
(defrule ship
   ?o <- (order (id ?i) (state paid))
   (not (hold ?i))
   ?s <- (stock ?i)
   =>
   (modify ?o (state shipped))
   (retract ?s)
   (assert (audit (id ?i))))
""",
    )
    r = kb.rules["ship"]
    assert r.reads == {"order", "hold", "stock"}
    assert r.asserts == {"audit"} and r.modifies == {"order"} and r.retracts == {"stock"}
    assert r.writes == {"audit", "order", "stock"}


def test_opaque_constructs_pass_through() -> None:
    m = rules.parse("(defclass A (is-a USER) (slot x))\n(defgeneric g)")
    kinds = [(c.kind, c.name) for c in m.constructs]
    assert kinds == [("defclass", "A"), ("defgeneric", "g")]
    assert m.constructs[0].text == "(defclass A (is-a USER) (slot x))"


def test_knowledge_base_api() -> None:
    text = (Path(__file__).parent / "wellformed" / "annotations.clp").read_text()
    kb = rules.knowledge_base_from_text("animals", text)
    assert kb.name == "animals" and len(kb.version) == 64
    assert kb.sources == [("animals.clp", text)]
    assert kb.askable == {"feature", "flies"}
    spec = kb.askable_specs["feature"]
    assert spec.ask_slot == "value" and spec.allowed == ["yes", "no"] and spec.key_slots == ["name"]
    assert spec.question == "Does the animal have ?name?"
    assert kb.rule_certainty == {"bird": 0.8} and kb.certainty_factors
    kb2 = rules.knowledge_base_from_text("animals", text + "\n")
    assert kb2.version != kb.version


def test_syntax_error_is_located_and_typed() -> None:
    with pytest.raises(rules.RuleSyntaxError) as info:
        rules.parse("(defrule r (a ?x)\n  => (printout t ?x", "t.clp")
    (d,) = info.value.diagnostics
    assert str(d).startswith("t.clp:2:")
    with pytest.raises(rules.RuleValidationError) as info2:
        rules.knowledge_base_from_text("k", "(defrule r => (foo))")
    assert "undefined function 'foo'" in str(info2.value.diagnostics[0])


def test_registered_python_functions_are_known() -> None:
    text = "(defrule r (a ?x) => (printout t (score ?x) crlf))"
    assert rules.check_sources([("a.clp", text)])
    assert rules.check_sources([("a.clp", text)], functions={"score"}) == []
