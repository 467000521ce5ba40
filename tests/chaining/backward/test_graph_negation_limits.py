"""Reachability in a cyclic graph, negation as failure, limits, stratification."""

from __future__ import annotations

from pathlib import Path as _Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rules
import rules as _rules
from chaining.backward import DepthLimitError, NotStratifiedError, ProofTimeout, ProverConfig, Session
from chaining.explain import why_not_sync

KB_DIR = _Path(__file__).resolve().parents[3] / "knowledge_bases"


def load(name: str) -> _rules.KnowledgeBase:
    return _rules.load_knowledge_base(KB_DIR / name)


EDGES = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a"), ("g", "g")]


def test_cyclic_reachability_terminates_with_exact_set() -> None:
    s = Session(load("graph_reach.clp"))
    g = nx.DiGraph(EDGES)
    for node in g.nodes:
        r = s.prove_sync(f"(reach {node} ?y)")
        assert r.complete
        expected = set(nx.descendants(g, node)) | (
            {node} if nx.has_path(g, node, node) and any(node in c for c in nx.simple_cycles(g)) else set()
        )
        assert {str(a.bindings["y"]) for a in r.answers} == expected, node
    assert len(s.prove_sync("(reach ?x ?y)").answers) == 15 + 4 + 5 + 1  # a,b,c; d,e; f; g


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef")), max_size=14))
def test_reachability_matches_transitive_closure(edges) -> None:
    facts = [{"template": "edge", "values": list(e)} for e in edges]
    s = Session(load("graph_reach.clp"), facts=facts)
    got = {(str(a.bindings["x"]), str(a.bindings["y"])) for a in s.prove_sync("(reach ?x ?y)").answers}
    g = nx.DiGraph(EDGES + list(edges))
    closure = {
        (x, y)
        for x in g.nodes
        for y in g.nodes
        if (x != y and nx.has_path(g, x, y))
        or (x == y and any(g.has_edge(p, x) and nx.has_path(g, x, p) for p in g.predecessors(x)))
    }
    assert got == closure


def test_birds_fly_unless_penguins() -> None:
    s = Session(load("birds.clp"))
    assert {str(a.bindings["x"]) for a in s.prove_sync("(flies ?x)").answers} == {"tweety", "opus"}
    assert not s.prove_sync("(flies pingu)").answers
    assert {str(a.bindings["x"]) for a in s.prove_sync("(penguin ?x)").answers} == {"pingu", "rocky"}
    w = why_not_sync(s, "(flies pingu)")
    assert not w.holds
    (failure,) = w.rules
    assert failure.rule == "birds-fly" and failure.status == "premise-failed"
    assert failure.index == 1 and failure.premise == "(not (penguin pingu))"
    w2 = why_not_sync(s, "(flies polly)")
    assert w2.rules[0].premise == "(not (grounded polly))"
    # once a penguin is known through working memory it stops flying
    s2 = Session(load("birds.clp"), facts=[{"template": "emperor", "values": ["tweety"]}])
    assert {str(a.bindings["x"]) for a in s2.prove_sync("(flies ?x)").answers} == {"opus"}


def test_depth_limit_is_a_clear_error() -> None:
    chain = " ".join(f"(link {i} {i + 1})" for i in range(300))
    kb = rules.knowledge_base_from_text(
        "deep",
        f"""
(deffacts chain {chain} (end 300))
(defrule back (link ?x ?y) (end ?y) => (assert (end ?x)))
""",
    )
    with pytest.raises(DepthLimitError):
        Session(kb, config=ProverConfig(max_depth=200)).prove_sync("(end 0)")  # 300 nested subgoals > 200
    # the default limit is a setting, not Python's stack: 300 nested subgoals are fine
    assert ProverConfig().max_depth >= 100_000
    assert Session(kb).prove_sync("(end 0)").answers


def test_depth_limit_exceeded() -> None:
    chain = " ".join(f"(link {i} {i + 1})" for i in range(100))
    kb = rules.knowledge_base_from_text(
        "deep",
        f"""
(deffacts chain {chain} (end 100))
(defrule back (link ?x ?y) (end ?y) => (assert (end ?x)))
""",
    )
    with pytest.raises(DepthLimitError, match="goal depth limit 30 exceeded") as info:
        Session(kb, config=ProverConfig(max_depth=30)).prove_sync("(end 0)")
    assert info.value.chain[0] == "(end 0)" and len(info.value.chain) == 31


def test_timeout_is_a_clear_error() -> None:
    kb = rules.knowledge_base_from_text(
        "count",
        """
(deffacts start (num 0))
(defrule up (num ?n) (test (< ?n 1000000)) => (assert (num (+ ?n 1))))
""",
    )
    with pytest.raises(ProofTimeout, match=r"proof ran past 0.3 s while proving \(num"):
        Session(kb, config=ProverConfig(timeout=0.3)).prove_sync("(num 5000000)")


def test_negation_through_recursion_is_undefined_under_wfs() -> None:
    # p-holds(a) :- not p-holds(a): neither provable nor refutable; the well-founded semantics says undefined
    kb = rules.knowledge_base_from_text(
        "odd",
        """
(deffacts f (thing a))
(defrule p (thing ?x) (not (p-holds ?x)) => (assert (p-holds ?x)))
""",
    )
    (a,) = Session(kb).prove_sync("(p-holds a)").answers
    assert a.truth == "undefined"
    assert NotStratifiedError.__name__  # still exported (raised for `forall` through recursion)


def test_skipped_rules_are_reported() -> None:
    kb = rules.load_knowledge_base(load("family.clp").sources[0][0])
    s = Session(
        rules.knowledge_base_from_text(
            "mix",
            """
(deftemplate item (slot n) (slot state))
(defrule only-modifies ?i <- (item (state new)) => (modify ?i (state seen)))
(defrule only-prints (item (n ?n)) => (printout t ?n crlf))
(defrule conditional (item (n ?n)) => (if (> ?n 1) then (assert (big ?n))))
(defrule fine (item (n ?n)) => (assert (known ?n)))
""",
        )
    )
    reasons = {sk.rule: sk.reason for sk in s.skipped}
    assert set(reasons) == {"only-modifies", "only-prints", "conditional"}
    assert "only modifies or retracts" in reasons["only-modifies"]
    assert "asserts nothing" in reasons["only-prints"]
    assert "control flow" in reasons["conditional"]
    assert kb is not None
