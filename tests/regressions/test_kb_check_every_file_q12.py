"""`workbench kb check DIR` reports every file's errors (q12): a file that cannot be read or parsed
stopped the report there, so the errors of the other files (here an undefined function in a file
that parses) came only after fixing the first. Now each is named `file:line:col`, the exit code is
1 as before, and the report says which files the others were checked without. Oracle: real CLIPS
through clipspy refuses exactly the three broken files and loads the fourth."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import clips
import pytest
from typer.testing import CliRunner

from cli.app import app

KB = Path(__file__).resolve().parent / "cases" / "kb_check_q12" / "kb"
BROKEN = {"1_unbalanced.clp": (3, 23), "2_unclosed.clp": (4, 1), "3_undefined_function.clp": (3, 28)}


@pytest.fixture()
def kb(tmp_path) -> Path:
    return Path(shutil.copytree(KB, tmp_path / "kb"))


def test_clips_refuses_the_three_broken_files_and_loads_the_fourth(kb) -> None:
    for path in sorted(kb.glob("*.clp")):
        env = clips.Environment()
        if path.name in BROKEN:
            with pytest.raises(clips.CLIPSError):
                env.load(str(path))
        else:
            env.load(str(path))


def _expected(kb: Path) -> list[str]:
    return [f"{kb / name}:{line}:{col}:" for name, (line, col) in BROKEN.items()]


def test_every_file_is_reported_by_the_command_line(kb) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "cli", "kb", "check", str(kb)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == _expected(kb), r.stdout
    assert "undefined function 'no-such-function'" in lines[2]
    assert "3 error(s) in 3 files" in r.stderr
    assert f"checked without {kb / '1_unbalanced.clp'}, {kb / '2_unclosed.clp'}" in r.stderr


def test_every_file_is_reported_in_json_and_past_an_unreadable_file(kb) -> None:
    (kb / "0_latin1.clp").write_bytes("; caf\xe9\n(defrule r0 (x) => )\n".encode("latin-1"))
    r = CliRunner().invoke(app, ["kb", "check", "--json", "--strict", str(kb)])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["ok"] is False
    where = [(Path(d["file"]).name, d["line"], d["column"]) for d in doc["diagnostics"]]
    assert where == [("0_latin1.clp", 1, 6)] + [(name, *pos) for name, pos in BROKEN.items()]  # at the byte (n16)
    assert doc["diagnostics"][0]["message"].startswith("not UTF-8: byte 0xe9 is not valid UTF-8 here")
    assert [Path(f).name for f in doc["checked_without"]] == ["0_latin1.clp", "1_unbalanced.clp", "2_unclosed.clp"]


def test_a_single_broken_file_reads_as_before(kb) -> None:
    r = CliRunner().invoke(app, ["kb", "check", str(kb / "2_unclosed.clp")])
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [
        f"{kb / '2_unclosed.clp'}:4:1: unexpected end of file: 1 unclosed '(' (defrule starting at line 3, "
        "column 1); expected ')'"
    ]
    assert "note:" not in r.output
