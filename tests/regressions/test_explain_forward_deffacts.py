"""Regression: forward HOW / WHY NOT lost every fact that came from deffacts.

`forward_why_not` and `kb explain` rebuild the final working memory of a forward run in a
backward `Session(include_deffacts=False)`. The session reset CLIPS (asserting the deffacts),
so the run's copies of those facts were dropped by CLIPS as duplicates and then filtered out
as "deffacts": `kb explain family.clp --fact '(parent dora otto)'` found no such fact, and
WHY NOT reported `(parent ?p otto)` as the failing premise of a rule that had fired.
Also: WHY NOT said "it fired, so the fact was later retracted" for a fact that still holds.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import rules
from chaining import explain
from chaining.forward import ForwardEngine
from cli.app import app

FAMILY = str(Path(__file__).resolve().parents[2] / "knowledge_bases" / "family.clp")

SOURCE = """
(deffacts base (edge a b) (edge b c))
(defrule step (edge ?x ?y) => (assert (path ?x ?y)))
(defrule join (edge ?x ?y) (path ?y ?z) => (assert (path ?x ?z)))
"""


def _run(kb):
    engine = ForwardEngine.from_knowledge_base(kb)
    try:
        return engine.evaluate([])
    finally:
        engine.close()


def test_why_not_matches_premises_against_deffacts_facts() -> None:
    kb = rules.knowledge_base_from_text("reg", SOURCE)
    result = _run(kb)
    w = explain.forward_why_not(kb, result, "(path a c)")
    assert w.holds
    by_rule = {r.rule: r for r in w.rules}
    assert by_rule["join"].status == "concludes", by_rule["join"].label
    assert "retracted" not in (by_rule["join"].detail or "")
    assert by_rule["step"].status == "premise-failed" and by_rule["step"].premise == "(edge a c)"


def test_explain_how_of_a_deffacts_fact() -> None:
    r = CliRunner().invoke(app, ["kb", "explain", FAMILY, "--fact", "(parent dora otto)", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert len(doc["facts"]) == 1 and doc["facts"][0]["fact"] == "(parent dora otto)"


def test_explain_why_not_family_recursive_rule_concludes() -> None:
    r = CliRunner().invoke(app, ["kb", "explain", FAMILY, "--fact", "(ancestor adam otto)", "--why-not", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rules_ = {x["rule"]: x for x in doc["rules"]}
    assert doc["holds"] is True
    assert rules_["ancestor-recursive"]["status"] == "concludes"
