"""Regression (n16, a newcomer's finding): after a `(read-number)` that read no number, CLIPS destroys the
environment with 80 bytes it lost and prints `[ENVRNMNT8] Environment data not fully deallocated` with C's
printf: `kb run` wrote those lines to standard output, after the program's text, and `kb run --json`'s
standard output was no longer one JSON object. They go to standard error now. A real process: the lines are
written by C to file descriptor 1, which an in-process runner does not see."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = '(defrule r => (bind ?n (read-number)) (printout t "got " ?n crlf))\n'


@pytest.mark.parametrize("as_json", [False, True])
def test_the_leak_report_goes_to_standard_error(tmp_path: Path, as_json: bool):
    (tmp_path / "rd.clp").write_text(PROGRAM)
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "kb", "run", "rd.clp", *(["--json"] if as_json else [])],
        cwd=tmp_path,
        input="abc\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    if as_json:
        assert json.loads(proc.stdout)["output"] == "got FALSE\n"  # one JSON object, nothing else
    else:
        assert proc.stdout == "got FALSE\n"
    # CLIPS's own report stays visible, where diagnostics go (if this CLIPS frees the buffer, there is none)
    assert "[ENVRNMNT8]" not in proc.stdout
