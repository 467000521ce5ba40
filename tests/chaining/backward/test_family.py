"""Family relations with known answers: grandparent, recursive ancestor, siblings (test), only-child (not)."""

from __future__ import annotations

from pathlib import Path as _Path

import pytest

import rules as _rules
from chaining.backward import Session

KB_DIR = _Path(__file__).resolve().parents[3] / "knowledge_bases"


def load(name: str) -> _rules.KnowledgeBase:
    return _rules.load_knowledge_base(KB_DIR / name)


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(load("family.clp"))


def answers(session: Session, goal: str, *names: str) -> set[tuple[str, ...]]:
    r = session.prove_sync(goal)
    assert r.complete
    return {tuple(str(a.bindings[n]) for n in names) for a in r.answers}


def test_grandparent(session: Session) -> None:
    assert answers(session, "(grandparent ?g ?c)", "g", "c") == {
        ("adam", "dora"),
        ("adam", "emil"),
        ("eva", "dora"),
        ("eva", "emil"),
        ("adam", "frank"),
        ("eva", "frank"),
        ("bert", "otto"),
        ("clara", "hanna"),
    }
    assert answers(session, "(grandparent ?g otto)", "g") == {("bert",)}


def test_recursive_ancestor(session: Session) -> None:
    assert answers(session, "(ancestor ?a otto)", "a") == {("dora",), ("gus",), ("bert",), ("adam",), ("eva",)}
    assert answers(session, "(ancestor adam ?d)", "d") == {
        (x,) for x in ["bert", "clara", "dora", "emil", "frank", "otto", "hanna"]
    }
    assert answers(session, "(ancestor otto ?d)", "d") == set()


def test_siblings_with_inequality_test(session: Session) -> None:
    assert answers(session, "(sibling ?x ?y)", "x", "y") == {
        ("bert", "clara"),
        ("clara", "bert"),
        ("dora", "emil"),
        ("emil", "dora"),
    }
    r = session.prove_sync("(sibling dora emil)")
    proof = r.answers[0].proof
    assert proof.rule == "sibling"
    assert [p.kind for p in proof.premises] == ["fact", "fact", "test"]
    assert proof.premises[2].detail == "(neq dora emil)"


def test_rule_with_not(session: Session) -> None:
    assert answers(session, "(only-child ?c)", "c") == {("frank",), ("hanna",), ("otto",)}
    proof = session.prove_sync("(only-child otto)").answers[0].proof
    assert proof.premises[1].kind == "not" and proof.premises[1].detail == "(sibling otto ?)"


def test_conjunctive_goal_and_first_n(session: Session) -> None:
    r = session.prove_sync("(parent ?p ?c) (male ?c)")
    assert {(str(a.bindings["p"]), str(a.bindings["c"])) for a in r.answers} == {
        ("adam", "bert"),
        ("eva", "bert"),
        ("bert", "emil"),
        ("clara", "frank"),
        ("dora", "otto"),
        ("gus", "otto"),
    }
    first = session.prove_sync("(ancestor ?a otto)", limit=2)
    assert len(first.answers) == 2 and not first.complete


def test_working_memory_facts_are_base_facts() -> None:
    s = Session(load("family.clp"), facts=[{"template": "parent", "values": ["otto", "zoe"]}])
    r = s.prove_sync("(ancestor adam zoe)")
    assert len(r.answers) == 1
    leaves = r.answers[0].proof.leaves()
    assert any(p.source == "working-memory" and str(p.fact) == "(parent otto zoe)" for p in leaves)
