"""`kb ask` with a goal of the wrong arity: a located usage error (exit 2), not "cannot be proved"."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import rules
from chaining.backward import Session, parse_goal
from chaining.backward.check import wrong_arity_in_goal
from cli.app import app

KB = str(Path(__file__).resolve().parents[3] / "knowledge_bases" / "family.clp")
runner = CliRunner()


def test_goal_with_one_field_too_many_is_a_located_error() -> None:
    r = runner.invoke(app, ["kb", "ask", KB, "(parent ?x ?y ?z)"])
    assert r.exit_code == 2, r.output
    assert "goal:1:2:" in r.stderr and "has 3 field(s)" in r.stderr and "has 2" in r.stderr
    assert "cannot be proved" not in r.output


def test_derived_relation_arity_comes_from_the_rule_conclusions() -> None:
    r = runner.invoke(app, ["kb", "ask", KB, "(male adam) (ancestor ?a)"])
    assert r.exit_code == 2, r.output
    assert "goal:1:14:" in r.stderr and "(ancestor ...) has 1 field(s)" in r.stderr


def test_goals_that_can_match_are_left_alone() -> None:
    for goal in ("(parent ?x ?y)", "(parent ?x $?rest)", "(parent $?all)", "(ancestor ?a otto)"):
        r = runner.invoke(app, ["kb", "ask", KB, goal])
        assert r.exit_code == 0, (goal, r.output)


def test_spliced_conclusions_may_have_any_length(tmp_path: Path) -> None:
    f = tmp_path / "plan.clp"
    f.write_text("(deffacts s (start a))\n(defrule r (start ?x) => (assert (plan ?x (create$ b c))))\n")
    kb = rules.load_knowledge_base(f)
    s = Session(kb)
    counts = s.index.field_counts()
    assert wrong_arity_in_goal(kb, parse_goal("(plan ?a ?b ?c)", kb), counts) == []
    assert wrong_arity_in_goal(kb, parse_goal("(start ?a ?b)", kb), counts)[0][0] == 2
    assert [a.bindings for a in s.prove_sync("(plan ?a ?b ?c)").answers] == [{"a": "a", "b": "b", "c": "c"}]


def test_plain_kb_ask_command_line_runs_without_typer_and_answers_alike(tmp_path: Path) -> None:
    """`workbench kb ask FILE GOAL [options]` skips typer (and the pydantic it imports): start-up time;
    the answers and exit codes are those of the typer command."""
    import json
    import subprocess
    import sys

    from chaining.backward.results import DEFAULT_MAX_DEPTH
    from cli.kb_ask_run import DEFAULT_MAX_DEPTH as CLI_DEFAULT

    assert CLI_DEFAULT == DEFAULT_MAX_DEPTH
    probe = (
        "import sys, cli\n"
        "try:\n    cli.main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('MODULES', 'typer' in sys.modules, 'pydantic' in sys.modules, code, file=sys.stderr)\n"
    )
    for args, code in (
        (["(ancestor ?x otto)", "--all", "--json", "--proofs", "first"], 0),
        (["(parent ?x ?y ?z)"], 2),
        (["(ancestr ?x otto)", "--json"], 1),
    ):
        fast = subprocess.run(
            [sys.executable, "-c", probe, "kb", "ask", KB, *args], capture_output=True, text=True, timeout=120
        )
        assert f"MODULES False False {code}" in fast.stderr, fast.stderr
        slow = runner.invoke(app, ["kb", "ask", KB, *args])
        assert slow.exit_code == code
        if code == 0:
            a, b = json.loads(fast.stdout), json.loads(slow.stdout)
            for doc in (a, b):
                doc.pop("seconds")
            assert a == b
        else:
            assert fast.stderr.split("MODULES")[0].strip() == slow.stderr.strip()
