"""Forward WHY NOT of a fact that a rule asserted and the run later retracted read as if the rule had
never fired: `(b (x 1))`, asserted by r1 with a `logical` premise and retracted by truth maintenance when
r2 retracted that premise, was explained as "rule r1: premise 1 (logical (a (x ?x))) failed (with ?x=1)";
a plain retract said only "it fired, so the fact was later retracted or modified". The trace records which
firing retracted it: the explanation now names it (firing and rule)."""

from __future__ import annotations

import rules
from chaining import explain
from chaining.forward import ForwardEngine

LOGICAL = """
(deftemplate a (slot x)) (deftemplate b (slot x))
(deffacts d (a (x 1)) (a (x 2)))
(defrule r1 (logical (a (x ?x))) => (assert (b (x ?x))))
(defrule r2 (declare (salience -10)) ?f <- (a (x 1)) => (retract ?f))
"""
RETRACT = """
(deftemplate a (slot x)) (deftemplate done (slot x))
(deffacts d (a (x 1)))
(defrule mk (a (x ?x)) => (assert (done (x ?x))))
(defrule rm (declare (salience -5)) ?f <- (done (x 1)) => (retract ?f))
"""


def why_not(source: str, pattern: str) -> explain.WhyNot:
    kb = rules.knowledge_base_from_text("k", source)
    with ForwardEngine.from_knowledge_base(kb) as engine:
        return explain.forward_why_not(kb, engine.evaluate([]), pattern)


def test_a_conclusion_lost_with_its_logical_support_names_the_retracting_firing() -> None:
    w = why_not(LOGICAL, "(b (x 1))")
    (r1,) = w.rules
    assert not w.holds and r1.status == "premise-failed"
    assert r1.detail == "during the run it fired at firing #0, #1; of its facts f-4, retracted at firing #2 (rule r2)"
    assert r1.label.endswith("failed (with ?x=1) in the final working memory (" + r1.detail + ")")


def test_a_retracted_conclusion_names_the_retracting_firing() -> None:
    (mk,) = why_not(RETRACT, "(done (x 1))").rules
    assert mk.status == "concludes"
    assert (
        mk.detail
        == "(done (x 1)); during the run it fired at firing #0; of its facts f-2, retracted at firing #1 (rule rm)"
    )


def test_a_premise_that_never_held_gets_no_trace_note() -> None:
    (r1,) = why_not(
        LOGICAL.replace("(a (x 1)) (a (x 2))", "(a (x 2))").replace("(a (x 1)) =>", "(a (x 9)) =>"), "(b (x 1))"
    ).rules
    assert r1.status == "premise-failed" and r1.detail is None


def test_with_fact_versions_the_retracted_conclusion_is_named_by_its_content(tmp_path) -> None:
    """n12 F13's note: F4's WHY NOT named a retracted conclusion by id only (`f-2`). A run that records fact
    versions (`trace_versions`, what `kb explain` builds) names its content too; `kb explain --why-not` says it."""
    import json

    from typer.testing import CliRunner

    from chaining.forward import EngineConfig
    from cli.app import app

    kb = rules.knowledge_base_from_text("k", RETRACT)
    with ForwardEngine.from_knowledge_base(kb, config=EngineConfig(trace_versions=True)) as engine:
        (mk,) = explain.forward_why_not(kb, engine.evaluate([]), "(done (x 1))").rules
    detail = "during the run it fired at firing #0; of its facts f-2 (done (x 1)), retracted at firing #1 (rule rm)"
    assert mk.detail == "(done (x 1)); " + detail  # before: "... of its facts f-2, retracted ..."
    file = tmp_path / "retract.clp"
    file.write_text(RETRACT)
    r = CliRunner().invoke(app, ["kb", "explain", str(file), "--fact", "(done (x 1))", "--why-not", "--json"])
    assert r.exit_code == 0, r.output
    assert detail in r.stdout and "f-2 (done (x 1))" in json.dumps(json.loads(r.stdout)), r.stdout
