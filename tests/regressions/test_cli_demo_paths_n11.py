"""Regression (n11, newcomer walk-through): `workbench demo --json MISSING/DIR/x.json` ran the whole
demo (minutes, every run recorded) and then ended in a FileNotFoundError traceback instead of the
report file; `--write-inputs` into a path that cannot be made was a traceback too. Now the report
path is checked before anything runs (exit 2, one line) and a folder that cannot be made is one line."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app


def test_json_into_a_missing_folder_is_refused_before_the_demo_runs(tmp_path, monkeypatch):
    import workbench.demo as demo

    ran = []
    monkeypatch.setattr(demo, "run_demo_sync", lambda *a, **k: ran.append(1))
    target = tmp_path / "missing" / "report.json"
    got = CliRunner().invoke(app, ["demo", "--quick", "--json", str(target)])
    assert got.exit_code == 2, got.output
    assert ran == []
    assert f"error: --json {target}: the folder {target.parent} does not exist" in got.output
    assert "Traceback" not in got.output


def test_json_naming_a_folder_is_refused(tmp_path, monkeypatch):
    import workbench.demo as demo

    monkeypatch.setattr(demo, "run_demo_sync", lambda *a, **k: None)
    got = CliRunner().invoke(app, ["demo", "--quick", "--json", str(tmp_path)])
    assert got.exit_code == 2, got.output
    assert f"error: --json {tmp_path}: is a folder; give the path of the JSON file to write" in got.output


def test_write_inputs_where_no_folder_can_be_made_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    got = CliRunner().invoke(app, ["demo", "--write-inputs", str(blocker / "inputs")])
    # exit 2 since q14: checked before anything is written, as every output option (cli/outputs.py)
    assert got.exit_code == 2, got.output
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exception
    assert f"error: --write-inputs {blocker / 'inputs'}: {blocker} is not a folder" in got.output
