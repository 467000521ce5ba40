"""Review finding 04: a goal missing its ')' names that, not the '=>' of the rule the goal is parsed in."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaining.backward import GoalSyntaxError
from chaining.backward.goals import parse_goal
from cli.app import app

ANIMALS = Path(__file__).resolve().parents[3] / "knowledge_bases" / "animals.clp"


@pytest.mark.parametrize(
    ("goal", "message"),
    [
        ("(class (name ?c)", "goal:1:17: the goal ends with 1 unclosed '('; expected ')'"),
        ("(a (b ?x", "goal:1:9: the goal ends with 2 unclosed '('; expected ')'"),
        ('(a (b ")")', "goal:1:11: the goal ends with 1 unclosed '('; expected ')'"),  # ')' in a string
        ("(a) (b", "goal:1:7: the goal ends with 1 unclosed '('"),
    ],
)
def test_an_unclosed_goal_says_so(goal, message):
    with pytest.raises(GoalSyntaxError) as err:
        parse_goal(goal)
    assert str(err.value).startswith(message) and "=>" not in str(err.value)


def test_a_stray_close_is_still_located_where_written():
    with pytest.raises(GoalSyntaxError, match=r"goal:1:4: unexpected '\)'"):
        parse_goal("(a))")


def test_kb_ask_reports_the_missing_paren():
    r = CliRunner().invoke(app, ["kb", "ask", str(ANIMALS), "(class (name ?c)"])
    assert r.exit_code == 1
    assert "goal:1:17: the goal ends with 1 unclosed '('; expected ')'" in r.output and "=>" not in r.output
