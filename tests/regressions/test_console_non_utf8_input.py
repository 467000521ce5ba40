"""Regression (review): bytes that are not UTF-8 on the standard input of `kb run` (a program using
`readline`) lost the text (`got []`) and printed "Exception ignored from cffi callback ...
UnicodeDecodeError" on stderr. They now read as U+FFFD, as a terminal shows them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RULES = '(defrule r => (printout t "name? ") (bind ?x (readline)) (printout t "got [" ?x "]" crlf))\n'


def test_invalid_utf8_input_reads_as_replacement_characters(tmp_path: Path):
    (tmp_path / "rd.clp").write_text(RULES)
    code = "import sys; from cli import main; sys.argv = ['workbench'] + sys.argv[1:]; main()"
    for given, shown in ((b"h\xe9llo\n", "got [h\ufffdllo]"), (b"h\xc3\xa9llo\n", "got [h\u00e9llo]")):
        proc = subprocess.run(
            [sys.executable, "-c", code, "kb", "run", str(tmp_path / "rd.clp")],
            input=given,
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert shown in proc.stdout.decode(), proc.stdout
        assert b"Exception ignored" not in proc.stderr and b"Traceback" not in proc.stderr
