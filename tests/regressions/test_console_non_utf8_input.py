"""Regression (review): bytes that are not UTF-8 on the standard input of `kb run` (a program using
`readline`) lost the text (`got []`) and printed "Exception ignored from cffi callback ...
UnicodeDecodeError" on stderr. They now read as U+FFFD, as a terminal shows them."""

from __future__ import annotations

import json
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


SPLIT = """(defrule r =>
  (bind ?c (get-char))
  (printout t "c [" ?c "]" crlf)
  (bind ?d (readline))
  (printout t "d [" ?d "]" crlf))
"""


def test_readline_after_get_char_returns_the_raw_bytes(tmp_path: Path):
    """Review of issue 17: after `(get-char)` took the first byte of a two-byte character, the next
    `(readline)` printed U+FFFD (EF BF BD) where CLIPS prints the remaining byte (A9) as it is.
    The console now gets CLIPS's bytes; `--json` output, which must be text, shows U+FFFD."""
    (tmp_path / "split.clp").write_text(SPLIT)
    code = "import sys; from cli import main; sys.argv = ['workbench'] + sys.argv[1:]; main()"
    run = [sys.executable, "-c", code, "kb", "run", str(tmp_path / "split.clp")]
    proc = subprocess.run(run, input=b"\xc3\xa9x\n", capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout == b"c [195]\nd [\xa9x]\n", proc.stdout  # what CLIPS 6.4 prints
    proc = subprocess.run([*run, "--json"], input=b"\xc3\xa9x\n", capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert "d [\ufffdx]" in json.loads(proc.stdout)["output"]
    assert b"Exception ignored" not in proc.stderr and b"Traceback" not in proc.stderr
