"""Regression (n11, newcomer walk-through): `workbench runs show` cut a run's inputs at 400 characters
and each trace detail at 100 without a mark, so a digits run's pixel list just stopped mid-number, as if
that were the whole input. The cut now says how much was left out and where to see it all."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app


def test_a_cut_input_says_so():
    runner = CliRunner()
    blank = json.dumps({"id": "x", "images": [[0] * 64] * 4})  # the gate refuses it: no model call in the run
    r = runner.invoke(app, ["run", "demo_digits", "--input", blank, "--json"])
    assert r.exit_code == 0, r.output
    run_id = json.loads(r.output.strip().splitlines()[-1])["run_id"]
    shown = runner.invoke(app, ["runs", "show", run_id], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    full = len(json.dumps(json.loads(blank)))
    assert f"… ({full - 400:,} more characters: runs show --json)" in text
