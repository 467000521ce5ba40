"""Regression (n16, a newcomer's finding): a rule file written as Latin-1 (`é` as the byte 0xe9, as old CLIPS
examples edited on Windows are) was refused at 1:1 with Python's codec message ("'utf-8' codec can't decode byte
0xe9 in position 27"). It is refused at the byte's line and column (in characters), saying what to do."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app


def test_a_latin1_rule_file_is_located_at_its_first_bad_byte(tmp_path):
    path = tmp_path / "latin.clp"
    path.write_bytes('(defrule r\n  => (printout t "café" crlf))\n'.encode("latin-1"))
    r = CliRunner().invoke(app, ["kb", "check", str(path)])
    assert r.exit_code == 1
    assert f"{path}:2:22: not UTF-8: byte 0xe9 is not valid UTF-8 here (invalid continuation byte); rule files " in (
        r.output
    )
    assert "save it as UTF-8" in r.output and "codec" not in r.output
    # a character before it on the line counts once, however many bytes it takes
    path.write_bytes('; ü\n(defrule r => (printout t "'.encode() + b'\xe9"))\n')
    r = CliRunner().invoke(app, ["kb", "check", str(path)])
    assert f"{path}:2:28: not UTF-8" in r.output
    path.write_bytes("; €".encode() + b"\xe9\n")
    r = CliRunner().invoke(app, ["kb", "check", str(path)])
    assert f"{path}:1:4: not UTF-8" in r.output
