"""For knowledge bases whose rules only assert, the facts provable backwards are exactly the facts
real CLIPS derives forwards (clipspy is the oracle), over goals for every relation."""

from __future__ import annotations

from pathlib import Path

import clips
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rules
from chaining.backward import Session
from chaining.backward.evaluator import _assert_text, convert_fact
from chaining.backward.terms import fact_key, normalise_fact
from rules.facts import Fact

KB_DIR = Path(__file__).resolve().parents[3] / "knowledge_bases"
FEATURES = [
    "hair",
    "gives-milk",
    "feathers",
    "flies",
    "lays-eggs",
    "eats-meat",
    "pointed-teeth",
    "claws",
    "forward-eyes",
    "hoofs",
    "chews-cud",
    "tawny",
    "dark-spots",
    "black-stripes",
    "long-neck",
    "long-legs",
    "black-and-white",
    "swims",
    "flies-well",
]


def clips_forward(kb: rules.KnowledgeBase, facts: list[Fact]) -> set[tuple]:
    env = clips.Environment()
    for c in kb.constructs:
        env.build(c.text)
    env.reset()
    for f in facts:
        env.assert_string(_assert_text(normalise_fact(f)))
    env.run()
    return {fact_key(convert_fact(f)) for f in env.facts()}


def backward_all(kb: rules.KnowledgeBase, facts: list[Fact]) -> set[tuple]:
    s = Session(kb, facts=facts)
    relations = set(kb.templates) | {f.template for f in s.given_facts} | set(s.rules_for)
    out: set[tuple] = set()
    for rel in sorted(relations):
        goal = f"({rel})" if rel in kb.templates and kb.templates[rel].slots else f"({rel} $?args)"
        r = s.prove_sync(goal)
        assert r.complete
        out |= {fact_key(a.fact) for a in r.answers}
    return out


def assert_only(kb: rules.KnowledgeBase) -> bool:
    return all(not r.modifies and not r.retracts for r in kb.rules.values())


@pytest.mark.parametrize("name", ["family.clp", "graph_reach.clp", "birds.clp", "bc_certainty.clp"])
def test_shipped_knowledge_bases(name: str) -> None:
    kb = rules.load_knowledge_base(KB_DIR / name)
    assert assert_only(kb)
    forward = clips_forward(kb, [])
    assert backward_all(kb, []) == forward
    # every forward fact is also provable as a ground goal
    s = Session(kb)
    for key in sorted(forward)[:40]:
        rel = key[0]
        fact = next(f for f in _facts_of(s, rel, key))
        assert s.prove_sync(str(fact)).answers, fact


def _facts_of(s: Session, rel: str, key: tuple):
    goal = f"({rel})" if rel in s.kb.templates and s.kb.templates[rel].slots else f"({rel} $?args)"
    for a in s.prove_sync(goal).answers:
        if fact_key(a.fact) == key:
            yield a.fact


@settings(max_examples=20, deadline=None)
@given(st.sets(st.sampled_from(FEATURES), max_size=8))
def test_zoo_with_observations_in_working_memory(present: set[str]) -> None:
    kb = rules.load_knowledge_base(KB_DIR / "zoo.clp")
    facts = [Fact("feature", {"name": f, "value": "yes" if f in present else "no"}) for f in FEATURES]
    assert backward_all(kb, facts) == clips_forward(kb, facts)


PEOPLE = ["ann", "bob", "cy", "dee", "eli", "fay"]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(PEOPLE)), max_size=10), st.sets(st.sampled_from(PEOPLE))
)
def test_family_on_random_parent_graphs(parents, males) -> None:
    kb = rules.load_knowledge_base(KB_DIR / "family.clp")
    facts = [Fact.ordered("parent", p, c) for p, c in parents] + [Fact.ordered("male", m) for m in males]
    assert backward_all(kb, facts) == clips_forward(kb, facts)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("pqrstu"), st.sampled_from("pqrstu")), max_size=12))
def test_graph_reach_on_random_graphs(edges) -> None:
    kb = rules.load_knowledge_base(KB_DIR / "graph_reach.clp")
    facts = [Fact.ordered("edge", a, b) for a, b in edges]
    assert backward_all(kb, facts) == clips_forward(kb, facts)


TEMPLATE_KB = """
(deftemplate item (slot name) (slot price (type INTEGER) (default 0)) (multislot tags) (slot tier (default basic)))
(deftemplate offer (slot name) (slot price (type INTEGER)) (multislot tags) (slot tier (allowed-symbols basic premium)))
(defrule expensive (item (name ?n) (price ?p&:(> ?p 100)) (tags $?t))
  => (assert (offer (name ?n) (price ?p) (tags ?t premium))))
(defrule cheap (item (name ?n) (price ?p&:(<= ?p 100))) => (bind ?d (- ?p 1)) (assert (offer (name ?n) (price ?d))))
(defrule tagged (item (name ?n) (tags $? sale $?)) => (assert (on-sale ?n)))
(defrule pair (offer (name ?a) (tier premium)) (offer (name ?b&~?a) (tier basic)) => (assert (bundle ?a ?b)))
"""


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["x", "y", "z", "w"]),
            st.integers(0, 200),
            st.lists(st.sampled_from(["sale", "new", "old"]), max_size=3),
        ),
        max_size=5,
    )
)
def test_templates_defaults_multifields_and_computed_values(items) -> None:
    kb = rules.knowledge_base_from_text("shop", TEMPLATE_KB)
    facts = [Fact("item", {"name": n, "price": p, "tags": tuple(t)}) for n, p, t in items]
    assert backward_all(kb, facts) == clips_forward(kb, facts)


RECURSIVE_KBS = {
    "nonlinear": """
(defrule e (edge ?x ?y) => (assert (reach ?x ?y)))
(defrule t (reach ?x ?y) (reach ?y ?z) => (assert (reach ?x ?z)))""",
    "mutual": """
(defrule a1 (edge ?x ?y) => (assert (odd ?x ?y)))
(defrule a2 (odd ?x ?y) (edge ?y ?z) => (assert (even ?x ?z)))
(defrule a3 (even ?x ?y) (edge ?y ?z) => (assert (odd ?x ?z)))
(defrule a4 (even ?x ?x) (odd ?x ?y) => (assert (loopy ?x ?y)))""",
}
NODES = ["v0", "v1", "v2", "v3", "v4"]


@pytest.mark.parametrize("name", list(RECURSIVE_KBS))
@settings(max_examples=12, deadline=None)
@given(edges=st.sets(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=9))
def test_nonlinear_and_mutual_recursion_with_bound_goals(name: str, edges) -> None:
    """Calls with bound arguments create many variant tables in one recursive component."""
    kb = rules.knowledge_base_from_text(name, RECURSIVE_KBS[name])
    facts = [Fact.ordered("edge", a, b) for a, b in edges]
    forward = clips_forward(kb, facts)
    assert backward_all(kb, facts) == forward
    s = Session(kb, facts=facts)
    for rel in {k[0] for k in forward} | {"reach", "odd"}:
        for x in NODES[:3]:
            got = {fact_key(a.fact) for a in s.prove_sync(f"({rel} {x} ?y)").answers}
            assert got == {k for k in forward if k[0] == rel and k[1][0][1][1][0] == ("y", x)}
