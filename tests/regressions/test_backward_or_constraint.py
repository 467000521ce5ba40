"""Regression (review): a bare `a|b` constraint in a premise (what a decision table's `in` writes)
keyed the call on its first alternative, so backward chaining found only the facts matching `a`
(`kb ask` gave al but not bob, "complete"). Forward chaining on real CLIPS is the oracle."""

from __future__ import annotations

import pytest

import rules
from chaining.backward import Session
from chaining.forward import EngineConfig, ForwardEngine

TEMPLATE = """
(deftemplate applicant (slot name) (slot region))
(deftemplate decision (slot who) (slot action))
(deffacts people (applicant (name al) (region east)) (applicant (name bob) (region north))
                 (applicant (name cy) (region west)))
(defrule pick (applicant (name ?n) (region east|north)) => (assert (decision (who ?n) (action or))))
"""
ORDERED = """
(deffacts people (lives al east) (lives bob north) (lives cy west))
(defrule pick (lives ?n east|north) => (assert (picked ?n)))
"""


@pytest.mark.parametrize(
    ("text", "goal", "template"), [(TEMPLATE, "(decision (who ?w))", "decision"), (ORDERED, "(picked ?w)", "picked")]
)
def test_disjunctions_find_every_answer_clips_derives(text, goal, template):
    kb = rules.knowledge_base_from_text("or", text)
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        forward = engine.evaluate([]).facts_of(template)
    finally:
        engine.close()
    clips_names = sorted(str(f.slots.get("who") or f.values[0]) for f in forward)
    proved = Session(kb).prove_sync(goal, limit=None)
    assert proved.complete and sorted(str(a.bindings["w"]) for a in proved.answers) == clips_names == ["al", "bob"]
