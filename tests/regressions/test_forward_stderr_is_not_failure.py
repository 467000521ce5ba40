"""A rule that printed to `stderr` (or to a logical name no router knows) made the evaluation
fail with RuleExecutionError, though CLIPS prints the text and runs on. Only a halt of execution
(a failed action or expression) is a failure now; the text stays in `messages`."""

from __future__ import annotations

import pytest

from chaining.forward import EngineConfig, ForwardEngine, RuleExecutionError

KB = """
(defrule warn => (printout stderr "careful" crlf) (printout nowhere "lost" crlf) (printout t "after" crlf))
(defrule later (declare (salience -1)) => (printout t "later" crlf))
"""


def test_printing_to_stderr_runs_on_like_clips():
    result = ForwardEngine.from_sources([("warn.clp", KB)], config=EngineConfig(workers=1)).evaluate([])
    assert result.output == "after\nlater\n"
    assert [f.rule for f in result.firings] == ["warn", "later"]
    assert "careful" in result.messages and "nowhere" in result.messages


def test_a_failing_action_still_fails_and_the_engine_recovers():
    kb = '(defrule bad => (printout t (+ (nth$ 1 (explode$ "a")) 1) crlf) (printout t "never" crlf))'
    engine = ForwardEngine.from_sources([("bad.clp", kb)], config=EngineConfig(workers=1))
    for _ in range(2):
        with pytest.raises(RuleExecutionError, match=r"last rule: bad.*expected argument #1"):
            engine.evaluate([])
    ok = ForwardEngine.from_sources([("warn.clp", KB)], config=EngineConfig(workers=1))
    assert ok.evaluate([]).output == "after\nlater\n"
