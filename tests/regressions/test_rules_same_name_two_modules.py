"""Rules of the same name in two CLIPS modules are two rules (CLIPS names them MODULE::name): `kb check`
warned that the second "redefines" the first, and the knowledge base kept one of them by its bare name, so
backward chaining could not prove what the other concludes. Oracle: real CLIPS through clipspy."""

from __future__ import annotations

import clips

import rules
from chaining.backward import Session

SOURCE = """
(defmodule MAIN (export ?ALL))
(deftemplate MAIN::finding (slot kind) (slot value))
(defmodule TRIAGE (import MAIN ?ALL))
(defrule TRIAGE::classify (finding (kind fever) (value ?v&:(> ?v 38))) => (assert (finding (kind urgent) (value yes))))
(defmodule BILLING (import MAIN ?ALL))
(defrule classify (finding (kind visit) (value ?v)) => (assert (finding (kind invoice) (value ?v))))
"""

FACTS = [
    {"template": "finding", "slots": {"kind": "fever", "value": 39}},
    {"template": "finding", "slots": {"kind": "visit", "value": 12}},
]


def _clips_rules(source: str, tmp_path) -> tuple[list[str], list[str]]:
    """CLIPS's own names of the rules it holds, and the facts after focusing both modules and running."""
    path = tmp_path / "kb.clp"
    path.write_text(source)
    env = clips.Environment()
    env.load(str(path))
    names = [str(n) for n in env.eval("(get-defrule-list *)")]
    env.eval("(focus TRIAGE BILLING)")
    env.assert_string("(finding (kind fever) (value 39))")
    env.assert_string("(finding (kind visit) (value 12))")
    env.run()
    return names, sorted(str(f) for f in env.facts())


def test_same_rule_name_in_two_modules_is_two_rules(tmp_path):
    names, facts = _clips_rules(SOURCE, tmp_path)
    assert names == ["TRIAGE::classify", "BILLING::classify"]  # CLIPS holds both (no redefinition)
    assert "(finding (kind urgent) (value yes))" in facts and "(finding (kind invoice) (value 12))" in facts
    assert rules.check_sources([("kb.clp", SOURCE)], warnings=True) == []  # no false "redefines" warning
    kb = rules.knowledge_base_from_text("kb", SOURCE)
    assert list(kb.rules) == names  # keyed as CLIPS names them
    session = Session(kb, facts=FACTS)
    urgent = session.prove_sync("(finding (kind urgent) (value ?v))").answers
    invoice = session.prove_sync("(finding (kind invoice) (value ?v))").answers
    assert [a.bindings["v"] for a in urgent] == ["yes"] and [a.bindings["v"] for a in invoice] == [12]
    assert urgent[0].proof.rules_used() == ["TRIAGE::classify"]
    assert invoice[0].proof.rules_used() == ["BILLING::classify"]


def test_kb_check_lists_both_rules_without_a_warning(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    path = tmp_path / "kb.clp"
    path.write_text(SOURCE)
    res = CliRunner().invoke(app, ["kb", "check", str(path)])
    assert res.exit_code == 0 and "warning" not in res.output, res.output
    assert "rule TRIAGE::classify:" in res.output and "rule BILLING::classify:" in res.output


def test_same_rule_name_twice_in_one_module_is_still_a_redefinition(tmp_path):
    twice = SOURCE.replace("(defrule classify", "(defrule TRIAGE::classify")
    names, _ = _clips_rules(twice, tmp_path)
    assert names == ["TRIAGE::classify"]  # CLIPS replaced the first
    warnings = rules.check_sources([("kb.clp", twice)], warnings=True)
    assert [w.line for w in warnings] == [7] and "redefines" in warnings[0].message
    assert list(rules.knowledge_base_from_text("kb", twice).rules) == ["classify"]
