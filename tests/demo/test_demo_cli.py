"""`workbench demo` from the CLI: prints the summary table and records every run in the store."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app


def test_demo_digits_quick_prints_the_table_and_records_runs(tmp_path):
    report = tmp_path / "report.json"
    res = CliRunner().invoke(
        app, ["demo", "--only", "digits", "--quick", "--json", str(report)], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0, res.output
    assert "workbench demo" in res.output and "demo_digits" in res.output and "runs recorded" in res.output
    data = json.loads(report.read_text())
    [digits] = data["pipelines"]
    assert digits["inputs"] == 7 and digits["runs_recorded"] == 7 and digits["failed"] == 0
    assert digits["outcomes"].get("rejected") == 1 and digits["model_calls_skipped_by_gates"] == 1
    from workbench import Workbench

    with Workbench.open() as wb:  # the per-test store named by WORKBENCH_DATABASE_URL
        assert len(wb.list_runs("demo_digits", limit=100)) == 7


def test_demo_rejects_an_unknown_part():
    res = CliRunner().invoke(app, ["demo", "--only", "vision"])
    assert res.exit_code == 2 and "expected one or more of digits, intents, generate" in res.output


def test_write_inputs(tmp_path):
    res = CliRunner().invoke(app, ["demo", "--write-inputs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "demo_digits.jsonl").read_text().splitlines()
    labels = [json.loads(x) for x in (tmp_path / "demo_digits.labels.jsonl").read_text().splitlines()]
    assert len(lines) == len(labels) == 58
    first = json.loads(lines[0])
    assert len(first["images"]) == 8 and all(len(im) == 64 for im in first["images"])
    assert len((tmp_path / "demo_intents.jsonl").read_text().splitlines()) == 128
