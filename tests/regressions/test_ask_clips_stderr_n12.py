"""Regression (n12 F15): `workbench kb ask --facts F` with a fact CLIPS refuses printed CLIPS's raw router
line `[CSTRNCHK1] A literal slot value found in the 'assert' command does not match ...` on stderr before our
located error; a `test` CLIPS cannot evaluate printed `[ARGACCES2] ...` before our warning. clipspy's error
router passes CLIPS's error text on to CLIPS's terminal router, which writes it to file descriptor 2 (so only a
real process shows it). Now the prover's environment keeps that text (its errors carry it, worded with the
fact's path): stderr has our lines only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ask(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli", "kb", "ask", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_a_refused_fact_gives_our_located_error_only(tmp_path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"template": "feature", "slots": {"name": "hair", "value": "maybe"}}]))
    r = _ask(str(ROOT / "knowledge_bases" / "zoo.clp"), "(animal ?a)", "--facts", str(facts))
    assert r.returncode == 1, (r.stdout, r.stderr)
    # before the fix: "[CSTRNCHK1] A literal slot value found in the 'assert' command ..." came first
    assert r.stderr == (
        f"error: {facts}: facts[0].slots.value: the symbol maybe is not allowed: "
        "slot value of feature allows only yes no\n"
    )


def test_a_test_clips_cannot_evaluate_gives_our_warning_only(tmp_path) -> None:
    kb = tmp_path / "t.clp"
    kb.write_text("(deftemplate in (slot x))\n(defrule r (in (x ?x)) (test (> ?x 1)) => (assert (big ?x)))\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"template": "in", "slots": {"x": "abc"}}]))
    r = _ask(str(kb), "(big ?x)", "--facts", str(facts))
    assert r.returncode == 0 and r.stdout == "no: (big ?x) cannot be proved\n", (r.stdout, r.stderr)
    # before the fix: a raw "[ARGACCES2] Function '>' expected ..." line came first
    assert r.stderr == (
        "warning: (test (> ?x 1)): CLIPS could not evaluate (> abc 1): "
        "[ARGACCES2] Function '>' expected argument #1 to be of type integer or float.\n"
    )
