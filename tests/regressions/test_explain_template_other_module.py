"""`kb explain` failed for a fact of a template defined in a module MAIN does not import: the
backward evaluator asserted base facts from MAIN ("Cannot define implied deftemplate 'out'
because of an import/export conflict") and read them back through clipspy, which re-finds a
template by name from the current module."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app

KB = """
(defmodule MAIN (export ?ALL))
(deftemplate MAIN::go (slot to))
(defrule MAIN::start (go (to B)) => (focus B))
(defmodule B (import MAIN ?ALL))
(deftemplate B::out (slot y))
(defrule B::make (go (to B)) => (assert (out (y 6))))
"""


def test_explain_a_fact_of_another_module(tmp_path: Path):
    kb = tmp_path / "modules.clp"
    kb.write_text(KB)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"template": "go", "slots": {"to": "B"}}]))
    result = CliRunner().invoke(
        app, ["kb", "explain", str(kb), "--facts", str(facts), "--fact", "(out (y 6))", "--json"]
    )
    assert result.exit_code == 0, result.output[-2000:]
    doc = json.loads(result.output)
    [fact] = doc["facts"]
    assert (fact["fact"], fact["rule"], fact["source"]) == ("(out (y 6))", "make", "rule")
    assert [p["fact"] for p in fact["premises"]] == ["(go (to B))"]
