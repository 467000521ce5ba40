"""Proving without proofs (`proofs=False`, `kb ask --json` without --proofs) gives the same answers,
in the same order, as proving with them; the fast paths that serve it (base facts binding a simple
pattern's variables directly, SLD conclusions binding their caller without a pattern match) agree
with answers computed independently here; `kb ask --json` writes its answers as they are found and
keeps the document valid JSON when the proof stops after some were written."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rules
from chaining.backward import Session
from cli.app import app

KB_DIR = Path(__file__).resolve().parents[3] / "knowledge_bases"

JOIN = """
(deffacts d
  (a x1) (a x2) (a x3) (a 4) (a "x1")
  (b y1) (b y2) (b x1) (b 4)
  (pair x1 x1) (pair x1 x2) (pair x2 x2) (pair 4 4.0) (pair 4 4) (pair "s" s))
(defrule cross (a ?x) (b ?y) => (assert (p ?x ?y)))
(defrule same-ab (a ?x) (b ?x) => (assert (both ?x)))
(defrule diag (pair ?x ?x) => (assert (diag ?x)))
(defrule addr ?f <- (a ?x) (b y1) => (assert (seen ?x)))
(defrule tested (a ?x) (b ?y) (test (eq ?x ?y)) => (assert (eqab ?x ?y)))
(defrule ors (or (a ?x) (b ?x)) => (assert (any ?x)))
(defrule negs (a ?x) (not (b ?x)) => (assert (only-a ?x)))
(defrule chain2 (p ?x ?y) (pair ?x ?z) => (assert (q ?y ?z)))
"""

A = ["x1", "x2", "x3", 4, '"x1"']
B = ["y1", "y2", "x1", 4]

GOALS = [
    "(p ?x ?y)",
    "(p x1 ?y)",
    "(p ?x x1)",
    "(p x3 y2)",
    "(p ?x ?x)",
    "(p ?x&x1|x2 ?y)",
    "(both ?x)",
    "(diag ?x)",
    "(seen ?x)",
    "(eqab ?x ?y)",
    "(any ?x)",
    "(only-a ?x)",
    "(q ?y ?z)",
    "(q y1 ?z)",
    "(p ?x ?y) (diag ?x)",
]


def _answers(s: Session, goal: str, proofs: bool) -> list[tuple]:
    got = s.prove_sync(goal, limit=None, proofs=proofs)
    assert got.complete
    return [(tuple(a.bindings.items()), str(a.fact), a.certainty, a.truth) for a in got.answers]


@pytest.mark.parametrize("goal", GOALS)
def test_proofs_none_same_answers_as_proofs_all(goal: str) -> None:
    kb = rules.knowledge_base_from_text("join", JOIN)
    with_proofs = _answers(Session(kb), goal, True)
    assert with_proofs, goal  # every goal here has answers
    assert _answers(Session(kb), goal, False) == with_proofs


@pytest.mark.parametrize(
    "file,goal",
    [
        ("family.clp", "(ancestor ?x ?y)"),
        ("family.clp", "(ancestor ?x otto)"),
        ("graph_reach.clp", "(reach ?x ?y)"),
        ("bc_certainty.clp", "(diagnosis ?d)"),
    ],
)
def test_proofs_none_same_answers_on_knowledge_bases(file: str, goal: str) -> None:
    kb = rules.load_knowledge_base(KB_DIR / file)
    with_proofs = _answers(Session(kb), goal, True)
    assert _answers(Session(kb), goal, False) == with_proofs


def _text(v) -> str:
    return f'"{v[1:-1]}"' if isinstance(v, str) and v.startswith('"') else str(v)


def test_fast_paths_agree_with_independent_answers() -> None:
    kb = rules.knowledge_base_from_text("join", JOIN)
    s = Session(kb)

    def keyed(v):  # CLIPS compares type and value: 4 and 4.0 differ, the symbol x1 and the string "x1" too
        return (type(v).__name__, v)

    cross = [(_text(x), _text(y)) for x, y in itertools.product(A, B)]
    got = [(str(a.bindings["x"]), str(a.bindings["y"])) for a in s.prove_sync("(p ?x ?y)", limit=None).answers]
    assert [(g[0].replace('"', ""), g[1]) for g in got] == [(c[0].replace('"', ""), c[1]) for c in cross]
    both = [x for x in A if any(keyed(x) == keyed(y) for y in B)]
    assert [a.bindings["x"] for a in s.prove_sync("(both ?x)", limit=None).answers] == both == ["x1", 4]
    diag = s.prove_sync("(diag ?x)", limit=None).answers
    assert [a.bindings["x"] for a in diag] == ["x1", "x2", 4]  # (pair 4 4.0) and (pair "s" s) are not diagonal
    assert [type(a.bindings["x"]).__name__ for a in diag][-1] == "int"
    sym_string = s.prove_sync("(p ?x x1)", limit=None).answers  # the symbol x1 and the string "x1" both
    assert [(type(a.bindings["x"]).__name__, str(a.bindings["x"])) for a in sym_string] == [
        ("Symbol", "x1"),
        ("Symbol", "x2"),
        ("Symbol", "x3"),
        ("int", "4"),
        ("String", "x1"),
    ]
    assert len({a.fact for a in sym_string}) == len(A)
    assert s.prove_sync("(p x3 y2)").count == 1 and s.prove_sync("(p x3 y9)").count == 0


ASK_MID_STREAM = (
    "(deffacts d\n"
    + "\n".join(f"  (item i{i})" for i in range(1500))
    + ")\n;@askable flies\n"
    + "(defrule p-item (item ?x) => (assert (p ?x)))\n"
    + "(defrule p-flies (flies tweety) => (assert (p tweety)))\n"
)


def test_kb_ask_json_streams_and_stays_valid_when_stopped(tmp_path: Path) -> None:
    runner = CliRunner()
    clp = tmp_path / "stream.clp"
    clp.write_text(ASK_MID_STREAM)
    # 1,500 answers from facts (more than one chunk written), then a question: end of input stops it
    r = runner.invoke(app, ["kb", "ask", str(clp), "(p ?x)", "--all", "--json"], input="")
    assert r.exit_code == 1 and "end of input" in r.stderr, r.output
    doc = json.loads(r.stdout)
    assert doc["count"] == 1500 and len(doc["answers"]) == 1500 and doc["error"] == "stopped"
    assert doc["answers"][0] == {"bindings": {"x": "i0"}, "fact": "(p i0)", "certainty": None, "truth": "true"}
    # answered: the streamed document equals the one built with proofs, less the proofs
    r_none = runner.invoke(app, ["kb", "ask", str(clp), "(p ?x)", "--all", "--json"], input="yes\n")
    r_all = runner.invoke(app, ["kb", "ask", str(clp), "(p ?x)", "--all", "--json", "--proofs", "all"], input="yes\n")
    assert r_none.exit_code == 0 and r_all.exit_code == 0, (r_none.output, r_all.output)
    none, full = json.loads(r_none.stdout), json.loads(r_all.stdout)
    assert none["count"] == full["count"] == 1501 and "steps" not in none and "error" not in none
    assert none["answers"] == [{k: v for k, v in a.items() if k != "proof"} for a in full["answers"]]
    assert list(none) == [k for k in full if k != "steps"]  # same fields in the same order
    assert [q["answer"] for q in none["questions"]] == ["yes"]
    # no answer before the error: nothing on stdout
    r = runner.invoke(app, ["kb", "ask", str(clp), "(p tweety)", "--json"], input="")
    assert r.exit_code == 1 and r.stdout == ""


def test_kb_ask_text_answers_are_whole_lines_when_piped(tmp_path: Path) -> None:
    """Piped (not a terminal), each answer is one plain line, however long (rich wrapped it at 80
    columns, and its per-line rendering made 100,000 answers take ~13 s)."""
    long_value = "v" * 150
    clp = tmp_path / "long.clp"
    clp.write_text(f"(deffacts d (a {long_value}) (a short) (b y1))\n(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))\n")
    r = CliRunner().invoke(app, ["kb", "ask", str(clp), "(p ?x ?y)", "--all", "--proofs", "none"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [f"answer 1: ?x = {long_value} ?y = y1", "answer 2: ?x = short ?y = y1"]


def test_kb_ask_json_answers_are_the_text_json_dumps_gives(tmp_path: Path) -> None:
    """The streamed answers (each value's JSON and CLIPS text made once and joined) are byte for byte
    what `json.dumps` gives each answer's `to_dict(proof=False)`: strings with quotes, backslashes
    and non-ASCII text, a symbol and a string of the same text, integers and floats, multifields."""
    clp = tmp_path / "values.clp"
    clp.write_text(
        "(deftemplate t (slot k) (multislot m))\n"
        '(deffacts d (v a) (v "a") (v 1) (v 1.0) (v "q\\"uote \\\\ back") (v "Grüße ☃") (v -2.5e-3) (v x1)\n'
        '  (t (k 1) (m a "b" 3)) (t (k 2) (m)))\n'
        "(defrule p (v ?x) (v ?y) => (assert (p ?x ?y)))\n"
        "(defrule tm (t (k ?k) (m $?m)) => (assert (tm ?k ?m)))\n"
    )
    for goal in ["(p ?x ?y)", "(tm ?k $?m)", "(t (k ?k) (m $?m))", "(v ?x) (v ?x)"]:
        r = CliRunner().invoke(app, ["kb", "ask", str(clp), goal, "--all", "--json"])
        assert r.exit_code == 0, r.output
        answers = Session(rules.load_knowledge_base(clp)).prove_sync(goal, limit=None, proofs=False).answers
        assert answers
        expected = json.dumps([a.to_dict(proof=False) for a in answers])
        assert f'"answers": {expected}, ' in r.stdout, goal
