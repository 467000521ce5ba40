"""Every evaluation on a pooled CLIPS environment prints what a freshly loaded CLIPS prints.

Each program changes, from a right-hand side, one piece of environment state that `(reset)`
leaves alone; the engine (one environment, reused) is evaluated three times and each output is
compared with real CLIPS (clipspy) on a new environment: load, reset, run.
"""

from __future__ import annotations

from pathlib import Path

import clips
import pytest

from chaining.forward import EngineConfig, ForwardEngine

CASES = Path(__file__).resolve().parents[2] / "regressions" / "cases" / "hardening"


class _Stdout(clips.Router):
    def __init__(self):
        super().__init__("test-stdout", 50)
        self.text: list[str] = []

    def query(self, name):
        return name == "stdout"

    def write(self, name, message):
        self.text.append(message)


def fresh_clips_output(text: str) -> str:
    env = clips.Environment()
    out = _Stdout()
    env.add_router(out)
    for construct in _constructs(text):
        env.build(construct)
    env.reset()
    env.run()
    return "".join(out.text)


def _constructs(text: str) -> list[str]:
    from chaining.forward.constructs import split_constructs

    return [c.text for c in split_constructs(text, "t.clp")]


PROGRAMS = {
    "reset-globals": (CASES / "globals_leak.clp").read_text(),
    "strategy": """
        (defrule show (declare (salience 10)) => (printout t (get-strategy) crlf) (set-strategy breadth))
        (defrule a => (assert (x 1) (x 2)))
        (defrule b (x ?n) => (printout t ?n crlf))""",
    "salience-evaluation": """
        (defrule r => (printout t (get-salience-evaluation) crlf) (set-salience-evaluation every-cycle))""",
    "focus-stack": """
        (defmodule MAIN (export ?ALL))
        (defmodule A (import MAIN ?ALL))
        (defrule A::a => (printout t "in A" crlf) (focus MAIN A))
        (defrule MAIN::m => (printout t (get-focus-stack) crlf) (focus A A) (halt))""",
    "defglobal-bound": """
        (defglobal ?*count* = 10)
        (defrule r => (bind ?*count* (* ?*count* 2)) (printout t ?*count* crlf))""",
    "instances": """
        (defclass POINT (is-a USER) (slot x))
        (definstances origin (o of POINT (x 0)))
        (defrule r => (printout t (length$ (find-all-instances ((?p POINT)) TRUE)) crlf)
                      (make-instance of POINT (x 1)) (make-instance p2 of POINT (x 2)))""",
    "watch": """
        (defrule r => (watch facts) (watch rules) (assert (seen)) (printout t "ok" crlf))
        (defrule s (seen) => (printout t "seen" crlf))""",
    "current-module": """
        (defmodule MAIN (export ?ALL))
        (defmodule OTHER (import MAIN ?ALL))
        (defmodule MAIN2 (import MAIN ?ALL))
        (defrule MAIN::r => (printout t (get-current-module) crlf) (set-current-module OTHER))""",
    "fact-duplication": """
        (deftemplate a (slot v))
        (defrule r => (printout t (get-fact-duplication) crlf) (set-fact-duplication TRUE)
                      (assert (a (v 1))) (assert (a (v 1)))
                      (printout t (length$ (find-all-facts ((?f a)) TRUE)) crlf))""",
    "gensym": """(defrule r => (printout t (gensym*) " " (gensym) crlf) (setgen 100))""",
    "undefrule": """
        (defrule first (declare (salience -1)) => (printout t "first" crlf) (undefrule second))
        (defrule second => (printout t "second" crlf))""",
    "breakpoint": """
        (defrule first (declare (salience -1)) => (printout t "first" crlf) (set-break second))
        (defrule second => (printout t "second" crlf))""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_evaluation_prints_what_a_fresh_clips_prints(name):
    text = PROGRAMS[name]
    expected = fresh_clips_output(text)
    assert expected  # the program prints something on a fresh environment
    with ForwardEngine.from_sources([(f"{name}.clp", text)], config=EngineConfig(workers=1)) as engine:
        outputs = [engine.evaluate().output for _ in range(3)]
    assert outputs == [expected] * 3


def test_globals_leak_counts_one_each_time():
    """The issue's case: 1, 1, 1 (it counted 1, 2, 3 across separate API calls)."""
    text = (CASES / "globals_leak.clp").read_text()
    with ForwardEngine.from_sources([("globals_leak.clp", text)], config=EngineConfig(workers=1)) as engine:
        assert [engine.evaluate().output for _ in range(3)] == ["1\n", "1\n", "1\n"]
        assert engine.environments == 1  # restored in place, not rebuilt


def test_environments_whose_rules_change_watch_state_are_rebuilt_not_reused():
    with ForwardEngine.from_sources([("w.clp", PROGRAMS["watch"])], config=EngineConfig(workers=1)) as engine:
        first = engine.evaluate().output
        assert engine.evaluate().output == first
