"""Regression (issue 17 review): `kb shell` died with SIGSEGV (exit 139, no message) on an endless
deffunction recursion, where `kb run` stops at call depth 1000. The shell now has the same guard:
a clear `[WORKBENCH5]` error, one `[PRCCODE4]` line instead of one per call level, and the session
goes on. Bounded recursion keeps working and its call trace never reaches the output. Each case
runs in a subprocess so that, without the fix, the crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _shell(stdin: str) -> subprocess.CompletedProcess:
    code = "import sys; from cli.app import app; sys.argv = ['workbench'] + sys.argv[1:]; app()"
    return subprocess.run(
        [sys.executable, "-c", code, "kb", "shell", "--time-limit", "60"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )


def test_endless_recursion_is_an_error_and_the_session_goes_on() -> None:
    r = _shell('(deffunction rec (?n) (rec (+ ?n 1)))\n(rec 0)\n(printout t "after" crlf)\n(exit)\n')
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "[WORKBENCH5] Halted: recursion too deep: rec reached call depth 1001 (limit 1000)" in r.stderr
    # the first warning (CLIPS's stdwrn), and the count of the others in the [WORKBENCH5] line
    assert (r.stdout + r.stderr).count("[PRCCODE4]") == 2
    assert "after" in r.stdout


def test_generic_and_mutual_recursion_defined_one_by_one() -> None:
    r = _shell(
        "(deffunction b (?n))\n(deffunction a (?n) (b ?n))\n(deffunction b (?n) (a ?n))\n(a 1)\n"
        "(defgeneric g)\n(defmethod g ((?n INTEGER)) (g (+ ?n 1)))\n(g 0)\n(+ 1 2)\n"
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "recursion too deep: a reached call depth" in r.stderr
    assert "recursion too deep: g reached call depth" in r.stderr
    assert r.stdout.rstrip().endswith("3")


def test_bounded_recursion_prints_no_trace() -> None:
    r = _shell(
        "(deffunction fact (?n) (if (<= ?n 1) then 1 else (* ?n (fact (- ?n 1)))))\n"
        '(fact 20)\n(printout t "DFN " ">> mine" crlf)\n'
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == "2432902008176640000\nDFN >> mine\n", r.stdout
    assert r.stderr == ""
