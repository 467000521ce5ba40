"""Regressions: facts given as JSON that crashed, were silently changed, or got an unclear error.

- an integer beyond 64 bits: `kb run` died with OverflowError in a template slot, and CLIPS
  silently clamped it to 9223372036854775807 in an ordered fact;
- 1e400 (inf) became the *symbol* `inf` in an ordered fact (a FLOAT in a template slot);
- a template name with spaces or parentheses was pasted into CLIPS text: "foo bar" asserted
  `(foo bar 1)`, "foo) (bar" asserted `(foo)`;
- a facts or answers file that is not UTF-8 gave a UnicodeDecodeError traceback;
- `kb ask` with a fact of an unknown template said "[EXPRNPSR3] Missing function declaration".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from rules.facts import Fact, FactError, facts_from_json

runner = CliRunner()
ORDERED_KB = "(defrule r (foo $?v) => (printout t ?v crlf))\n"
TEMPLATE_KB = "(deftemplate item (slot v))\n(defrule r (item (v ?v)) => (printout t ?v crlf))\n"


def _files(tmp_path: Path, kb: str, facts_text: str | bytes) -> tuple[str, str]:
    k = tmp_path / "kb.clp"
    k.write_text(kb)
    f = tmp_path / "facts.json"
    f.write_bytes(facts_text if isinstance(facts_text, bytes) else facts_text.encode())
    return str(k), str(f)


@pytest.mark.parametrize(
    "kb, facts, expected",
    [
        (
            TEMPLATE_KB,
            '[{"template": "item", "slots": {"v": 123456789012345678901234567890}}]',
            "facts[0].slots.v: integer 123456789012345678901234567890 is outside CLIPS's 64-bit range",
        ),
        (
            ORDERED_KB,
            '[{"template": "foo", "values": [-123456789012345678901234567890]}]',
            "facts[0].values[0]: integer -123456789012345678901234567890 is outside",
        ),
        (ORDERED_KB, '[{"template": "foo", "values": [1e400]}]', "facts[0].values[0]: inf is not a finite number"),
        (TEMPLATE_KB, '[{"template": "item", "slots": {"v": NaN}}]', "facts[0].slots.v: nan is not a finite number"),
        (ORDERED_KB, '[{"template": "foo bar", "values": [1]}]', "facts[0].template: 'foo bar' is not a CLIPS symbol"),
        (
            ORDERED_KB,
            '[{"template": "foo) (bar", "values": [1]}]',
            "facts[0].template: 'foo) (bar' is not a CLIPS symbol",
        ),
        (ORDERED_KB, '[{"template": "foo", "id": "x", "values": [1]}]', "facts[0].id: expected a fact id"),
        (ORDERED_KB, b'[{"template": "foo", "values": ["caf\xe9"]}]', "not UTF-8 text (byte 36"),
    ],
)
@pytest.mark.parametrize("command", ["run", "ask", "explain"])
def test_bad_fact_values_are_located_errors(tmp_path: Path, command: str, kb: str, facts, expected: str) -> None:
    k, f = _files(tmp_path, kb, facts)
    args = {
        "run": ["kb", "run", k],
        "ask": ["kb", "ask", k, "(foo ?x)"],
        "explain": ["kb", "explain", k, "--fact", "(foo ?x)"],
    }
    r = runner.invoke(app, [*args[command], "--facts", f])
    assert r.exit_code == 1, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert f"error: {f}: " in r.output and expected in r.output, r.output


def test_python_facts_refuse_out_of_range_integers_and_bad_names() -> None:
    with pytest.raises(FactError, match="64-bit range"):
        Fact("item", {"v": 2**63})
    assert Fact("item", {"v": 2**63 - 1}).slots["v"] == 2**63 - 1
    with pytest.raises(FactError, match="not a CLIPS symbol"):
        Fact.ordered("a b", 1)
    assert Fact("MAIN::item", {"v": -(2**63)}).template == "MAIN::item"
    assert facts_from_json([{"template": "item", "slots": {"v": 1.5e308}}])[0].slots["v"] == 1.5e308


@pytest.mark.parametrize(
    "facts, expected",
    [
        (
            '[{"template": "nosuch", "slots": {"a": 1}}]',
            "facts[0]: template 'nosuch' is not defined in this knowledge base",
        ),
        ('[{"template": "item", "slots": {"w": 1}}]', "facts[0].slots.w: template 'item' has no slot 'w'"),
        ('[{"template": "item", "values": [1]}]', "facts[0]: 'item' is a deftemplate with slots ['v']; give 'slots'"),
    ],
)
def test_ask_names_the_fact_that_does_not_fit(tmp_path: Path, facts: str, expected: str) -> None:
    k, f = _files(tmp_path, TEMPLATE_KB, facts)
    for args in (["kb", "ask", k, "(item (v ?x))"], ["kb", "run", k]):
        r = runner.invoke(app, [*args, "--facts", f])
        assert r.exit_code == 1 and f"error: {f}: {expected}" in r.output, r.output
        assert "EXPRNPSR3" not in r.output


def test_answers_file_not_utf8(tmp_path: Path) -> None:
    k, f = _files(tmp_path, TEMPLATE_KB, "[]")
    answers = tmp_path / "answers.json"
    answers.write_bytes(b'{"(item (v 1))": "caf\xe9"}')
    r = runner.invoke(app, ["kb", "ask", k, "(item (v ?x))", "--answers", str(answers)])
    assert r.exit_code == 1 and "cannot read answers" in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
