"""Regression (n16, a newcomer's finding): `workbench run P --input-file F` stopped the whole file (exit 2,
nothing run) at the first line that was not JSON or not an object, naming only that line, while a line that
fails the input schema was answered at its place. Now every bad line is answered at its place
(`{"input": "F:N", "error", "error_type": "InputLineError"}`), the other lines run, and the exit status is 1."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app


def test_bad_lines_are_answered_at_their_place_and_the_rest_run(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    blank = json.dumps({"images": [[0] * 64]})  # the gate refuses it: a run without a model call
    f = tmp_path / "in.jsonl"
    f.write_text(f"{blank}\nnot json\n\n[1, 2]\n{blank}\n")
    r = CliRunner().invoke(app, ["run", "demo_digits", "--input-file", str(f)])
    assert r.exit_code == 1, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [d.get("input") or d["status"] for d in lines] == ["succeeded", f"{f}:2", f"{f}:4", "succeeded"]
    assert lines[1] == {
        "input": f"{f}:2",
        "error": "column 1: not valid JSON: Expecting value",
        "error_type": "InputLineError",
    }
    assert lines[2]["error"] == "expected a JSON object, got list"


def test_one_input_that_is_not_json_is_still_bad_usage():
    r = CliRunner().invoke(app, ["run", "demo_digits", "--input", "not json"])
    assert r.exit_code == 2 and "--input: not valid JSON" in r.output
