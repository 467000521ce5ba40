"""Smallest inputs of the defects a reviewer found in the backward prover after issue 18."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import rules
from chaining.backward import Session
from cli.kb_ask_run import fast_main

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "regressions" / "cases" / "backward_review"


def test_certainty_factors_with_a_limit_count_the_answers_given(capsys: pytest.CaptureFixture) -> None:
    # with certainty factors every answer was collected, then cut to `limit`: count stayed 3
    kb = rules.load_knowledge_base([CASES / "cfm.clp"])
    r = Session(kb).prove_sync("(p ?x)", limit=1)
    assert len(r.answers) == 1 and r.count == 1 and not r.complete
    assert fast_main([str(CASES / "cfm.clp"), "(p ?x)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["answers"]) == 1 and doc["count"] == 1
    assert fast_main([str(CASES / "cfm.clp"), "(p ?x)"]) == 0
    out = capsys.readouterr().out
    assert "(first answer only; --all for every answer)" in out and "first 3" not in out


def _chain(n: int) -> str:
    """`gen_chain.py n`: a right-recursive path over the chain n0 -> ... -> n(n-1)."""
    edges = "\n".join(f"  (edge n{i} n{i + 1})" for i in range(n - 1))
    return (
        f"(deffacts g\n{edges})\n(defrule p-edge (edge ?x ?y) => (assert (path ?x ?y)))\n"
        "(defrule p-step (edge ?x ?z) (path ?z ?y) => (assert (path ?x ?y)))\n"
    )


def test_deep_proof_as_text_tree_and_nested_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # how_tree recursed (RecursionError about 1,000 levels down); the nested proof dict was not JSON
    from rich.console import Console

    from chaining.backward.proof import NESTED_PROOF_DEPTH
    from chaining.explain import how_lines, how_tree

    (tmp_path / "c1000.clp").write_text(_chain(1000))
    kb = rules.load_knowledge_base([tmp_path / "c1000.clp"])
    proof = Session(kb).prove_sync("(path n0 n999)").answers[0].proof
    tree = how_tree(proof)
    depth, node = 0, tree
    while node.children:
        node, depth = node.children[-1], depth + 1
    assert depth == 999
    lines = list(how_lines(proof))
    assert len(lines) == 1998 and lines[-1].endswith("└── (edge n998 n999)  given (f-999 deffacts)")
    assert fast_main([str(tmp_path / "c1000.clp"), "(path n0 n999)"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "answer 1: yes" and out[1:] == lines  # the proof one line a node (a ground goal: complete)
    # nested JSON: NESTED_PROOF_DEPTH levels, then the rest as a flat list of steps
    d = proof.to_dict()
    back = json.loads(json.dumps(d))
    depth, node = 0, back
    while node["premises"]:
        node, depth = node["premises"][-1], depth + 1
    assert depth == NESTED_PROOF_DEPTH and node["label"] == f"(path n{depth} n999)  by rule p-step"
    steps, root = node["continued"]["steps"], node["continued"]["root"]
    assert steps[root]["label"] == node["label"] and len(steps) == 2 * (999 - depth)
    assert "(edge n998 n999)  given (f-999 deffacts)" in {s["label"] for s in steps}
    # a branching proof renders as rich renders its tree (the shallow case is unchanged)
    family = rules.load_knowledge_base([Path(__file__).resolve().parents[3] / "knowledge_bases" / "family.clp"])
    for a in Session(family).prove_sync("(grandparent ?g ?c)", limit=3).answers:
        console = Console(width=500, record=True, file=io.StringIO())
        console.print(how_tree(a.proof))
        assert [x.rstrip() for x in console.export_text().splitlines()] == list(how_lines(a.proof))


@pytest.mark.parametrize("general", [False, True], ids=["join", "general-engine"])
def test_time_limit_met_when_the_last_premise_rejects_every_fact(general: bool) -> None:
    # the last premise's loop counted only matching facts towards the clock check: (b ?y ?y) rejects
    # every fact, so the join ran to its end (15.75 s with a 0.5 s limit at 3,000 x 20,000 facts)
    from chaining.backward import ProofTimeout, ProverConfig

    facts = " ".join(f"(a i{i})" for i in range(3)) + " " + " ".join(f"(b j{i} k{i})" for i in range(2000))
    text = f"(deffacts d {facts})\n(defrule p (a ?x) (b ?y ?y) => (assert (p ?x ?y)))\n"
    if general:  # b concluded by a rule too: no join, the frame evaluation matches b's given facts
        text += "(defrule q (c ?u ?v) => (assert (b ?u ?v)))\n"
    kb = rules.knowledge_base_from_text("over", text)
    # the deadline has passed before the first check: only a check of the clock can stop the proof
    with pytest.raises(ProofTimeout, match=r"while proving \(p \?x \?y\)"):
        Session(kb, config=ProverConfig(timeout=1e-9)).prove_sync("(p ?x ?y)")


def test_timeout_of_a_query_join_names_the_goal() -> None:
    # a query answered by one join (join.py) ran before any state set the context: "while proving ?"
    from chaining.backward import ProofTimeout, ProverConfig

    facts = " ".join(f"(a x{i})" for i in range(40)) + " " + " ".join(f'(b "y{i}")' for i in range(40))
    kb = rules.knowledge_base_from_text("cross", f"(deffacts d {facts})")
    with pytest.raises(ProofTimeout) as err:
        Session(kb, config=ProverConfig(timeout=1e-9)).prove_sync("(a ?x) (b ?y)")
    assert "while proving (a ?x) (b ?y); goal chain: (a ?x) (b ?y)" in str(err.value) and "?;" not in str(err.value)


def test_depth_limit_in_a_join_names_the_called_goal() -> None:
    # the join's depth check named its caller: "proving (q ?x); chain: (q ?x) -> (q ?x)"
    from chaining.backward import DepthLimitError, ProverConfig

    kb = rules.load_knowledge_base([CASES / "dq.clp"])
    with pytest.raises(DepthLimitError) as err:
        Session(kb, config=ProverConfig(max_depth=1)).prove_sync("(q ?x)")
    assert str(err.value).endswith("proving (p ?x ?y); chain (outermost first): (q ?x) -> (p ?x ?y)")
    assert err.value.chain == ["(q ?x)", "(p ?x ?y)"]
    assert Session(kb, config=ProverConfig(max_depth=2)).prove_sync("(q ?x)").answers


def _workbench(*args: str) -> subprocess.CompletedProcess:
    """The `workbench` console script (`cli.main`: the fast path, then typer) in a fresh interpreter."""
    code = "import sys; from cli import main; sys.argv = ['workbench', *sys.argv[1:]]; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_timeout_nan_is_a_usage_error_on_the_fast_path() -> None:
    # float("nan") passed the fast path's `< 0.001` check and ProverConfig raised a ValueError traceback
    assert fast_main([str(CASES / "dq.clp"), "(q ?x)", "--json", "--timeout", "nan"]) is None  # typer decides
    r = _workbench("kb", "ask", str(CASES / "dq.clp"), "(q ?x)", "--json", "--timeout", "nan")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--timeout" in r.stderr and not r.stdout


def test_string_with_a_line_break_keeps_its_answer_on_one_line(capsys: pytest.CaptureFixture) -> None:
    # a string holding a newline split the plain-text answer line (and its proof's lines) in two
    assert fast_main([str(CASES / "nl.clp"), "(r ?x ?y)"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        'answer 1: ?x = "a\\nb" ?y = inf',
        '(r "a\\nb" inf)  by rule r',
        '└── (s "a\\nb")  given (f-1 deffacts)',
        "(first answer only; --all for every answer)",
    ]


def _strict_json(text: str):
    def refuse(name: str):
        raise ValueError(f"not standard JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("proofs", ["none", "all"])
def test_infinite_float_in_json_is_the_string_clips_prints(proofs: str, capsys: pytest.CaptureFixture) -> None:
    # (exp 1000) was written as Infinity, which is not JSON (jq and strict readers refuse it); now the
    # string "Infinity" (protobuf's JSON mapping, as stored runs and predict answers write it; q12: was "inf")
    assert fast_main([str(CASES / "nl.clp"), "(r ?x ?y)", "--json", "--proofs", proofs]) == 0
    doc = _strict_json(capsys.readouterr().out)
    assert doc["answers"][0]["bindings"] == {"x": "a\nb", "y": "Infinity"}
    if proofs == "all":
        assert doc["steps"][-1]["bindings"] == {"x": "a\nb"}
    kb = rules.load_knowledge_base([CASES / "nl.clp"])
    a = Session(kb).prove_sync("(r ?x ?y)").answers[0]
    assert _strict_json(json.dumps(a.to_dict()))["bindings"]["y"] == "Infinity"


def test_json_with_a_facts_file_does_not_import_typer() -> None:
    # cli/facts_file.py imported typer at top, so `kb ask --json --facts F` paid typer's start-up
    code = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write(f'typer={\"typer\" in sys.modules}'));"
        "from cli import main; sys.argv = ['workbench', *sys.argv[1:]]; main()"
    )
    args = ["kb", "ask", str(CASES / "dq.clp"), "(b ?x)", "--json", "--all", "--facts", str(CASES / "facts_b.json")]
    r = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [a["bindings"]["x"] for a in json.loads(r.stdout)["answers"]] == [2, 5]
    assert r.stderr.endswith("typer=False")


def test_explain_backward_deep_proof_as_plain_lines(tmp_path: Path) -> None:
    # piped, rich wrapped a 1,000-level tree into 4-character columns and cut it off (83 lines)
    from typer.testing import CliRunner

    from cli.app import app

    (tmp_path / "c1000.clp").write_text(_chain(1000))
    r = CliRunner().invoke(
        app, ["kb", "explain", str(tmp_path / "c1000.clp"), "--fact", "(path n0 n999)", "--backward"]
    )
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) == 1998 and lines[0] == "(path n0 n999)  by rule p-step"
    assert lines[-1].endswith("└── (edge n998 n999)  given (f-999 deffacts)")
