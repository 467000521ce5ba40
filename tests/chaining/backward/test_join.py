"""Set-at-a-time evaluation of rule bodies over base relations (`chaining/backward/join.py`):
the same answers, in the same order, with the same proofs as the frame-by-frame evaluation, and
the same answers in the same order as SWI-Prolog (first occurrences; skipped without `swipl`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rules
from chaining.backward import Session, engine, join
from rules.facts import Fact

SWIPL = shutil.which("swipl")
VALUES = ["a", "b", "c", 1, 2]
PAIRS = st.lists(st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES)), max_size=10, unique=True)

CLP = """
(defrule j1 (a ?x ?y) (b ?y ?z) => (assert (j1 ?x ?z)))
(defrule j1-again (b ?x ?y) (a ?y ?x) => (assert (j1 ?x ?y)))
(defrule j2 (a ?x ?x) (b ?x ?) => (assert (j2 ?x)))
(defrule j3 (a ?x b) (b ?y ?x) => (assert (j3 ?x ?y)))
(defrule j4 (a ?x ?) (b ? ?v) => (assert (j4 ?x ?v)))
(defrule j5 (a ?x ?y) => (assert (j5 ?x ?x)))
(defrule j6 (a ?x ?y) (b ?y ?z) (a ?z ?x) => (assert (j6 ?x ?y ?z)))
(defrule j7 (a c ?y) (b ?y 1) => (assert (j7 ?y)))
(defrule j8 (b ?y ?) (a ?x ?x) => (assert (j8 ?x ?y)))
"""
PL = """
j1(X,Z) :- a(X,Y), b(Y,Z).
j1(X,Y) :- b(X,Y), a(Y,X).
j2(X) :- a(X,X), b(X,_).
j3(X,Y) :- a(X,b), b(Y,X).
j4(X,V) :- a(X,_), b(_,V).
j5(X,X) :- a(X,_).
j6(X,Y,Z) :- a(X,Y), b(Y,Z), a(Z,X).
j7(Y) :- a(c,Y), b(Y,1).
j8(X,Y) :- b(Y,_), a(X,X).
"""
# (our goal, the Prolog goal with the same variables in the same order)
GOALS = [
    ("(j1 ?p ?q)", "j1(P,Q)", "P-Q"),
    ("(j1 a ?q)", "j1(a,Q)", "Q"),
    ("(j1 ?p 1)", "j1(P,1)", "P"),
    ("(j1 ?p ?p)", "j1(P,P)", "P"),
    ("(j2 ?p)", "j2(P)", "P"),
    ("(j3 ?p ?q)", "j3(P,Q)", "P-Q"),
    ("(j4 ?p ?q)", "j4(P,Q)", "P-Q"),
    ("(j5 ?p ?q)", "j5(P,Q)", "P-Q"),
    ("(j5 b ?q)", "j5(b,Q)", "Q"),
    ("(j6 ?p ?q ?r)", "j6(P,Q,R)", "P-Q-R"),
    ("(j7 ?p)", "j7(P)", "P"),
    ("(j8 ?p ?q)", "j8(P,Q)", "P-Q"),
    ("(a ?p ?q) (j1 ?q ?r)", "(a(P,Q), j1(Q,R))", "P-Q-R"),
    ("(j4 ?p ?q) (a ?q ?p)", "(j4(P,Q), a(Q,P))", "P-Q"),
    ("(a ?p ?q) (b ?q ?r)", "(a(P,Q), b(Q,R))", "P-Q-R"),
    ("(a ?p ?p) (b ?p ?) (a ?q c)", "(a(P,P), b(P,_), a(Q,c))", "P-Q"),
    ("(b ?p 1) (a c ?p)", "(b(P,1), a(c,P))", "P"),
]
GROUND = ["(j1 a b)", "(j1 1 c)", "(j2 a)", "(j6 a b c)"]


def _session(a_facts, b_facts) -> Session:
    kb = rules.knowledge_base_from_text("join", CLP)
    facts = [Fact.ordered("a", x, y) for x, y in a_facts] + [Fact.ordered("b", x, y) for x, y in b_facts]
    return Session(kb, facts=facts)


def _answers(s: Session, goal: str, **kw) -> list:
    r = s.prove_sync(goal, limit=kw.pop("limit", None), **kw)
    return [(a.bindings, a.fact, a.proof.to_dict() if kw.get("proofs", True) else None) for a in r.answers] + [
        ("count", r.count, r.complete)
    ]


def _frames_only(monkeypatch) -> None:
    monkeypatch.setattr(engine, "join_plan", lambda *a: None)
    monkeypatch.setattr(engine, "query_rows", lambda *a: None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a_facts=PAIRS, b_facts=PAIRS)
def test_join_equals_frames(a_facts, b_facts, monkeypatch) -> None:
    """Answers, their order, bindings and whole proof trees, counts and completeness, with and without
    proofs and with a limit, equal those of the frame-by-frame evaluation."""
    got = {}
    for mode in ("join", "frames"):
        with monkeypatch.context() as m:
            if mode == "frames":
                _frames_only(m)
            s = _session(a_facts, b_facts)
            got[mode] = [
                _answers(s, g, **kw)
                for g in [x[0] for x in GOALS] + GROUND
                for kw in ({}, {"proofs": False}, {"limit": 2}, {"limit": 1, "proofs": False})
            ]
    assert got["join"] == got["frames"]


def test_join_is_used_and_lazy(monkeypatch) -> None:
    """The cross product goes through the join (one `_rows` per rule call), and a limit stops it at
    once: the first answers of a 1,000,000-row join come back without the rest being made."""
    calls = []
    real = join._rows

    def spy(*a):
        calls.append(a[1])
        return real(*a)

    monkeypatch.setattr(join, "_rows", spy)
    kb = rules.knowledge_base_from_text("cross", "(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))")
    facts = [Fact.ordered("a", f"x{i}") for i in range(1000)] + [Fact.ordered("b", f"y{i}") for i in range(1000)]
    s = Session(kb, facts=facts)
    seen = []
    r = s.prove_sync("(p ?x ?y)", limit=3, on_answer=seen.append, proofs=False)
    assert len(calls) == 1
    assert [a.bindings for a in r.answers] == [{"x": "x0", "y": f"y{i}"} for i in range(3)]
    assert [a.fact for a in seen] == [a.fact for a in r.answers]
    assert r.count == 3 and not r.complete
    assert r.seconds < 5  # the whole join would be 1,000,000 rows


def test_join_duplicates_are_one_answer() -> None:
    """A projection (`(q ?x)` from `(a ?x) (b ?y)`) gives each answer once, in first-found order."""
    kb = rules.knowledge_base_from_text("dup", "(defrule q (a ?x) (b ?y) => (assert (q ?x)))")
    facts = [Fact.ordered("a", x) for x in ("m", "n", 3)] + [Fact.ordered("b", y) for y in ("u", "v")]
    r = Session(kb, facts=facts).prove_sync("(q ?x)")
    assert [a.bindings["x"] for a in r.answers] == ["m", "n", 3]
    assert r.count == 3


def test_join_not_used_with_certainty_factors_or_derived_premises(monkeypatch) -> None:
    """Certainty factors, and premises over derived or askable relations, use the frames."""
    calls = []
    real = join._rows
    monkeypatch.setattr(join, "_rows", lambda *a: calls.append(1) or real(*a))
    cf = ";@cf 0.8\n(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))\n(deffacts d (a x) (b y))"
    r = Session(rules.knowledge_base_from_text("cf", cf)).prove_sync("(p ?x ?y)")
    assert r.count == 1 and r.answers[0].certainty == pytest.approx(0.8)
    derived = "(defrule q (a ?x) => (assert (q ?x)))\n(defrule p (q ?x) (a ?x) => (assert (p ?x)))\n(deffacts d (a x))"
    assert Session(rules.knowledge_base_from_text("d", derived)).prove_sync("(p ?x)").count == 1
    assert calls == [1]  # only q's body (a base relation) is a join; p reads q, a derived relation


def _swipl_lines(program: str, goal: str, tmp: Path) -> list[str]:
    f = tmp / "p.pl"
    f.write_text(program + f"\nmain :- {goal}.\n")
    out = subprocess.run([SWIPL, "-q", "-g", "main", "-t", "halt", str(f)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def _facts_pl(name: str, pairs) -> str:
    return "".join(f"{name}({x},{y}).\n" for x, y in pairs) or f":- dynamic {name}/2.\n"


@pytest.mark.skipif(SWIPL is None, reason="swipl (SWI-Prolog) is not installed")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a_facts=PAIRS, b_facts=PAIRS)
def test_join_answers_in_prolog_order(a_facts, b_facts, tmp_path: Path) -> None:
    """Every goal's answers are SWI-Prolog's solutions (untabled: SLD order), first occurrences, in order."""
    s = _session(a_facts, b_facts)
    program = _facts_pl("a", a_facts) + _facts_pl("b", b_facts) + PL
    printer = "forall(member(G-T, [" + ", ".join(f"({pg})-({t})" for _, pg, t in GOALS) + "]), "
    printer += "(findall(T, G, L), format('~w~n', [L])))"
    lines = _swipl_lines(program, printer, tmp_path)
    for (goal, _, _), line in zip(GOALS, lines, strict=True):
        ours = []
        for a in s.prove_sync(goal, limit=None).answers:
            ours.append("-".join(str(v) for v in a.bindings.values()))
        theirs: list[str] = []
        for item in line.strip("[]").split(",") if line != "[]" else []:
            if item not in theirs:
                theirs.append(item)
        assert ours == theirs, goal


def test_join_keeps_typed_values_apart(tmp_path: Path) -> None:
    """The symbol x and the string "x", the integer 1 and the float 1.0 are different facts and make
    different answers through the join (its distinct-rows check compares Python values, which call
    them equal, and so keeps the de-duplication)."""
    f = tmp_path / "typed.clp"
    f.write_text('(deffacts d (a x) (a "x") (b 1) (b 1.0))\n(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))\n')
    r = Session(rules.load_knowledge_base(f)).prove_sync("(p ?x ?y)")
    got = [(type(a.bindings["x"]).__name__, type(a.bindings["y"]).__name__) for a in r.answers]
    assert got == [("Symbol", "int"), ("Symbol", "float"), ("String", "int"), ("String", "float")]


def test_join_that_finds_nothing_still_meets_the_time_limit() -> None:
    """216,000 combinations of the outer premises, none matching the last: the join checks the clock
    as it goes (as the frames do every 256 steps), so the proof stops at its time limit."""
    from chaining.backward import ProofTimeout, ProverConfig

    text = "(deffacts d " + " ".join(f"(a i{i})" for i in range(60)) + " (b none none none))\n"
    text += "(defrule p (a ?x) (a ?y) (a ?z) (b ?x ?y ?z) => (assert (p ?x ?y ?z)))\n"
    s = Session(rules.knowledge_base_from_text("slow", text), config=ProverConfig(timeout=0.05))
    with pytest.raises(ProofTimeout, match="proof ran past 0.05 s"):
        s.prove_sync("(p ?x ?y ?z)")
    with pytest.raises(ProofTimeout):
        s.prove_sync("(a ?x) (a ?y) (a ?z) (b ?x ?y ?z)")
