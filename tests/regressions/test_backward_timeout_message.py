"""Regression: a proof's time limit reached while CLIPS evaluated a `test` said
'proof ran past its time limit while CLIPS evaluated (< 31 1000000)' (no limit, no goal),
while one reached between subgoals said 'proof ran past 0.3 s while proving (num ...)'; which
one a user saw depended on timing (a flaky test). Both now name the limit and the goal."""

import pytest

import rules
from chaining.backward import ProofTimeout, ProverConfig, Session
from chaining.backward.evaluator import ClipsEvaluator


def test_timeout_inside_clips_evaluation_names_limit_and_goal(monkeypatch):
    kb = rules.knowledge_base_from_text(
        "count",
        """
(deffacts start (num 0))
(defrule up (num ?n) (test (< ?n 1000000)) => (assert (num (+ ?n 1))))
""",
    )
    calls = {"n": 0}
    original = ClipsEvaluator.eval_text

    def halted_on_third(self, text):
        calls["n"] += 1
        if calls["n"] == 3:  # as if the watchdog halted CLIPS at the deadline
            raise ProofTimeout(f"proof ran past its time limit while CLIPS evaluated {text}", text)
        return original(self, text)

    monkeypatch.setattr(ClipsEvaluator, "eval_text", halted_on_third)
    with pytest.raises(
        ProofTimeout, match=r"proof ran past 0.3 s while proving \(num .*CLIPS was evaluating \(<"
    ) as err:
        Session(kb, config=ProverConfig(timeout=0.3)).prove_sync("(num 5000000)")
    assert err.value.goal.startswith("(num")
