"""Issue 18's cases (inputs copied to tests/regressions/cases/backward/): each failed before the
iterative SLD/SLG engine, the flat proof JSON, EMYCIN's max for `or`, unknown-relation reports and
the well-founded semantics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rules
from chaining.backward import ProverConfig, Session
from cli.app import app

CASES = Path(__file__).resolve().parent / "cases" / "backward"
runner = CliRunner()


def generated(tmp_path: Path, script: str, n: int) -> Path:
    out = tmp_path / f"{script}-{n}.clp"
    text = subprocess.run([sys.executable, str(CASES / script), str(n)], check=True, capture_output=True, text=True)
    out.write_text(text.stdout)
    return out


def test_right_recursive_chain_ground_goal_is_linear_not_cubic(tmp_path: Path) -> None:
    # 1,000 nodes took 194 s (cubic growth, every call scanned all edges); 3,000 used to be out of reach
    kb = rules.load_knowledge_base(generated(tmp_path, "gen_chain.py", 3000))
    r = Session(kb, config=ProverConfig(timeout=120)).prove_sync("(path n0 n2999)")
    assert len(r.answers) == 1 and r.complete
    assert r.tables == 2999  # one table per node: (path ni n2999)
    assert not Session(kb).prove_sync("(path n5 n2)").answers


def test_left_recursive_chain_proof_is_flat_json(tmp_path: Path) -> None:
    # a proof 1,500 levels deep: nested JSON broke json.loads (RecursionError); steps are a flat list
    clp = generated(tmp_path, "gen_chain_left.py", 1500)
    r = runner.invoke(app, ["kb", "ask", str(clp), "(path n0 n1499)", "--json", "--proofs", "all"])
    assert r.exit_code == 0, r.output[-2000:]
    doc = json.loads(r.stdout)
    (a,) = doc["answers"]
    steps = doc["steps"]
    depth, node = 0, steps[a["proof"]]
    while node["premises"]:
        node = steps[node["premises"][0]]
        depth += 1
    assert depth == 1499 and node["fact"] == "(edge n0 n1)"
    # all 1,499 answers without proofs stay small
    r = runner.invoke(app, ["kb", "ask", str(clp), "(path n0 ?y)", "--all", "--json"])
    doc = json.loads(r.stdout)
    assert doc["count"] == 1499 and "steps" not in doc and len(r.stdout) < 300_000


def test_ground_goal_on_infinite_relation_returns() -> None:
    kb = rules.load_knowledge_base(CASES / "count_ground.clp")
    r = Session(kb, config=ProverConfig(timeout=10)).prove_sync("(count 3)")
    (a,) = r.answers
    assert [p.rule for p in a.proof.walk() if p.rule] == ["next", "next", "next"]
    first = Session(kb, config=ProverConfig(timeout=10)).prove_sync("(count ?n)", limit=5)
    assert [a.bindings["n"] for a in first.answers] == [0, 1, 2, 3, 4] and not first.complete


def test_planner_with_plan_list_returns_prologs_first_plan() -> None:
    kb = rules.load_knowledge_base(CASES / "monkey_plan.clp")
    r = Session(kb, config=ProverConfig(timeout=10)).prove_sync(
        "(canget atdoor onfloor atwindow hasnot $?plan)", limit=1
    )
    (a,) = r.answers
    assert [str(x) for x in a.bindings["plan"]] == [
        "walk", "atdoor", "atwindow", "push", "atwindow", "middle", "climb", "grasp"
    ]  # fmt: skip


def test_planner_states_how_tree_is_the_plan() -> None:
    kb = rules.load_knowledge_base(CASES / "monkey_states.clp")
    (a,) = Session(kb).prove_sync("(canget atdoor onfloor atwindow hasnot)").answers
    assert a.proof.rules_used()[:4] == ["walk", "push", "climb", "grasp"]


def test_or_takes_the_max_certainty() -> None:
    kb = rules.load_knowledge_base(CASES / "cf_or.clp")
    (a,) = Session(kb).prove_sync("(o)").answers
    assert a.certainty == pytest.approx(0.45)  # 0.5 * max(0.9, 0.5); was 0.5875 (branches combined)


def test_negative_certainty_prints_as_no() -> None:
    r = runner.invoke(app, ["kb", "ask", str(CASES / "cf_negative_yes.clp"), "(x)"])
    assert r.exit_code == 0, r.output
    assert "answer 1: no (certainty -0.08333)" in r.stdout and "yes" not in r.stdout


def test_negation_through_a_cycle_under_the_well_founded_semantics() -> None:
    kb = rules.load_knowledge_base(CASES / "win_cyclic.clp")
    r = Session(kb).prove_sync("(win ?x)")
    assert [(str(a.bindings["x"]), a.truth) for a in r.answers] == [("q", "true")]  # as SWI's tnot and CLIPS
    kb2 = rules.knowledge_base_from_text(
        "draw",
        "(deffacts m (move a b) (move b a) (move b c) (move c d))\n"
        "(defrule win (move ?x ?y) (not (win ?y)) => (assert (win ?x)))",
    )
    got = {str(a.bindings["x"]): a.truth for a in Session(kb2).prove_sync("(win ?x)").answers}
    assert got == {"c": "true", "a": "undefined", "b": "undefined"}
    r = runner.invoke(app, ["kb", "ask", str(CASES / "win_cyclic.clp"), "(win ?x)", "--all"])
    assert r.exit_code == 0 and "answer 1: ?x = q" in r.stdout


def test_unknown_relations_are_reported_with_did_you_mean() -> None:
    clp = str(CASES / "unknown_relation.clp")
    r = runner.invoke(app, ["kb", "ask", clp, "(ancestr ?x ann)", "--all"])
    assert r.exit_code == 1
    assert "goal:1:2: the goal uses relation ancestr" in r.output and "did you mean ancestor?" in r.output
    r = runner.invoke(app, ["kb", "ask", clp, "(grandparent ?x ?y)", "--all"])
    assert r.exit_code == 0
    assert "unknown_relation.clp:7:38: rule grandparent, premise 2 uses relation parnet" in r.output
    assert "did you mean parent?" in r.output
    r = runner.invoke(app, ["kb", "check", clp])
    assert r.exit_code == 0 and "7:38: warning: rule grandparent, premise 2 uses relation parnet" in r.output
    res = Session(rules.load_knowledge_base(clp)).prove_sync("(ancestr ?x ann)")
    assert not res.answers and any("did you mean ancestor?" in w for w in res.warnings)


def test_deep_proof_leaves_the_recursion_limit_alone(tmp_path: Path) -> None:
    # the prover raised sys.setrecursionlimit to 12 x max_depth; a later deep JSON body then segfaulted the server
    before = sys.getrecursionlimit()
    kb = rules.load_knowledge_base(generated(tmp_path, "gen_chain.py", 5000))
    r = Session(kb, config=ProverConfig(max_depth=1_000_000, timeout=120)).prove_sync("(path n0 n4999)")
    assert r.answers and sys.getrecursionlimit() == before


def test_answers_without_proofs_are_the_same_answers(tmp_path: Path) -> None:
    # `kb ask --json` without --proofs keeps no premises: the same answers, a fraction of the memory
    kb = rules.load_knowledge_base(generated(tmp_path, "gen_chain_left.py", 200))
    s = Session(kb)
    with_proofs = s.prove_sync("(path n0 ?y)")
    without = s.prove_sync("(path n0 ?y)", proofs=False)
    assert [a.fact for a in without.answers] == [a.fact for a in with_proofs.answers]
    assert all(not a.proof.premises for a in without.answers)
    assert with_proofs.answers[-1].proof.premises
