"""Regression: endless recursion in a deffunction or generic function crashed the process.

`kb run rec.clp` with `(deffunction spin () (spin))` died with SIGSEGV (exit 139): CLIPS has no
recursion limit and overflowed the C stack -- a rule file could take down the API server. Now
recursive functions are traced and halted past a call depth, with a clear error; recursion
within the limit works and its trace never reaches the program's output. Each case runs in a
subprocess so that, without the fix, the crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SPIN = "(deffunction spin () (spin))\n(defrule r => (spin))\n"
GENERIC_AT_BUILD = "(defgeneric h)\n(defmethod h ((?n INTEGER)) (h (+ ?n 1)))\n(defglobal ?*x* = (h 0))\n"
FINE = """(deffunction fact (?n) (if (<= ?n 1) then 1 else (* ?n (fact (- ?n 1)))))
(defgeneric h)
(defmethod h ((?n INTEGER)) (if (> ?n 50) then ?n else (h (+ ?n 1))))
(defrule r => (printout t "DFN " ">> " (fact 20) " " (h 0) crlf))
"""


def _kb_run(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    f = tmp_path / "kb.clp"
    f.write_text(text)
    code = "import sys; from cli.app import app; sys.argv = ['workbench'] + sys.argv[1:]; app()"
    return subprocess.run(
        [sys.executable, "-c", code, "kb", "run", str(f), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        (SPIN, "recursion too deep: spin reached call depth 1001 (limit 1000)"),
        (GENERIC_AT_BUILD, "kb.clp:3:1: building this defglobal: recursion too deep: h reached call depth 1001"),
    ],
)
def test_endless_recursion_is_an_error_not_a_crash(tmp_path: Path, text: str, expected: str) -> None:
    r = _kb_run(tmp_path, text)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert expected in r.stderr


def test_bounded_recursion_runs_and_trace_stays_out_of_output(tmp_path: Path) -> None:
    r = _kb_run(tmp_path, FINE, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["output"] == "DFN >> 2432902008176640000 51\n"


def _kb_ask(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    f = tmp_path / "kb.clp"
    f.write_text(text)
    code = "import sys; from cli.app import app; sys.argv = ['workbench'] + sys.argv[1:]; app()"
    return subprocess.run(
        [sys.executable, "-c", code, "kb", "ask", str(f), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_backward_prover_survives_endless_recursion_and_loops(tmp_path: Path) -> None:
    """The prover evaluates `test` patterns in its own CLIPS environment: same crash, and an endless
    loop there ignored --timeout."""
    rec = "(deffunction spin (?x) (spin ?x))\n"
    rec += "(defrule r (a ?x) (test (spin ?x)) => (assert (b ?x)))\n(deffacts f (a 1))\n"
    r = _kb_ask(tmp_path, rec, "(b ?x)")
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "recursion too deep: spin reached call depth 1001" in r.stderr and "no: (b ?x) cannot be proved" in r.stdout
    loop = "(deffunction spin (?x) (while TRUE do (bind ?y 1)))\n" + rec.split("\n", 1)[1]
    r = _kb_ask(tmp_path, loop, "(b ?x)", "--timeout", "0.5")
    assert (
        r.returncode == 1
        and "proof ran past 0.5 s while proving (b ?x)" in r.stderr
        and "CLIPS was evaluating (spin 1)" in r.stderr
    ), r.stderr[-2000:]
