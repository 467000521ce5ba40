"""Regression (n11 #1): forward WHY NOT named no rule for a fact a rule `modify`s.

`kb explain mod.clp --fact '(counter (n 2))' --why-not` said "no rule concludes facts of this relation" although
rule `bump` made `(counter (n 2))` and then modified it to n 3; the backward WHY NOT named such rules, the
forward one only looked for rules that `assert` the relation.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

import rules
from chaining import explain
from chaining.forward import ForwardEngine
from cli.app import app

SOURCE = """
(deftemplate counter (slot n (type INTEGER)) (slot status (default new)))
(deftemplate done (slot n))
(deffacts start (counter (n 0)))
(defrule bump ?c <- (counter (n ?n&:(< ?n 3))) => (modify ?c (n (+ ?n 1)) (status bumped)))
(defrule finish (counter (n 3) (status ?s)) => (assert (done (n 3))))
"""


def test_why_not_names_the_rule_that_modified_the_relation(tmp_path) -> None:
    kb = rules.knowledge_base_from_text("mod", SOURCE)
    engine = ForwardEngine.from_knowledge_base(kb)
    try:
        result = engine.evaluate([])
    finally:
        engine.close()
    w = explain.forward_why_not(kb, result, "(counter (n 2))")
    assert not w.holds
    (bump,) = [r for r in w.rules if r.rule == "bump"]
    assert bump.status == "skipped" and "only modifies or retracts" in bump.detail
    assert "it fired and modified counter facts" in bump.detail
    assert not [r for r in w.rules if r.rule == "finish"]  # it asserts done, not counter
    path = tmp_path / "mod.clp"
    path.write_text(SOURCE)
    r = CliRunner().invoke(app, ["kb", "explain", str(path), "--fact", "(counter (n 2))", "--why-not", "--json"])
    assert r.exit_code == 0, r.output
    assert "bump" in r.stdout and "no rule concludes" not in r.stdout
    json.loads(r.stdout)
