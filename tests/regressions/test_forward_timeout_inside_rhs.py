"""Regression: the time limit did not stop a right-hand side, test or initialiser that never returns.

`kb run spin.clp --timeout 2` with `(defrule r => (spin))` and `(deffunction spin () (while
TRUE do ...))` hung forever: the clock was only read between batches of firings. The same for
an endless expression in a deffacts (run at reset), a `test` pattern, or a defglobal initialiser
(run while the knowledge base is built). Now CLIPS's halt flags stop them, the error names the
rule, and the engine stays usable.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rules
from chaining.forward import EngineConfig, EvaluationTimeout, ForwardEngine, KnowledgeBaseLoadError
from cli.app import app

SPIN = "(deffunction spin () (while TRUE do (bind ?x 1)))\n"
KB = (
    SPIN
    + """
(defrule loop-when-asked (go) => (printout t "looping" crlf) (spin))
(defrule hello (name ?n) => (printout t "hello " ?n crlf))
"""
)


def test_timeout_interrupts_an_endless_right_hand_side_and_engine_stays_usable() -> None:
    kb = rules.knowledge_base_from_text("spin", KB)
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        t0 = time.perf_counter()
        with pytest.raises(EvaluationTimeout, match="last rules fired: loop-when-asked") as info:
            engine.evaluate([{"template": "go", "values": []}], timeout=0.3)
        assert time.perf_counter() - t0 < 5.0
        assert info.value.partial.output == "looping\n"
        for _ in range(3):  # the halt flags were cleared: later evaluations run normally
            out = engine.evaluate([{"template": "name", "values": ["ann"]}], timeout=5.0)
            assert out.output == "hello ann\n" and [f.rule for f in out.firings] == ["hello"]
    finally:
        engine.close()


@pytest.mark.parametrize(
    "body",
    [
        "(deffacts f (x (spin)))",
        "(defrule r (x ?) (test (spin)) => )\n(deffacts f (x 1))",
    ],
)
def test_timeout_interrupts_endless_reset_or_test(body: str) -> None:
    kb = rules.knowledge_base_from_text("spin", SPIN + body)
    config = EngineConfig(workers=1, timeout=0.3, load_timeout=0.3)
    try:
        engine = ForwardEngine.from_knowledge_base(kb, config=config)
    except KnowledgeBaseLoadError as exc:  # CLIPS may evaluate the test while building the rule
        assert "took longer than its time limit" in str(exc)
        return
    try:
        with pytest.raises(EvaluationTimeout):
            engine.evaluate([])
    finally:
        engine.close()


def test_cli_defglobal_initialiser_that_never_returns(tmp_path: Path) -> None:
    f = tmp_path / "g.clp"
    f.write_text(SPIN + "(defglobal ?*x* = (spin))\n")
    r = CliRunner().invoke(app, ["kb", "run", str(f), "--timeout", "30", "--load-timeout", "0.3"])
    assert r.exit_code == 1, r.output
    assert (
        f"{f}:2:1: loading the knowledge base took longer than its time limit of 0.3 s, in this defglobal" in r.output
    )
