"""Regression (issue 20): `runs list` was unreadable at 80 columns, and `run --explain` printed the
explanation tree into stdout after the outputs' JSON (so `| jq` failed)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app

PIPE = """name: echo
nodes:
  - id: req
    type: input
    schema: {type: object, properties: {text: {type: string}}}
  - id: out
    type: output
    fields: {text: "input.text", length: "len(input.text)"}
edges:
  - {from: req, to: out}
"""


def _env(tmp_path, monkeypatch):
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "echo_with_a_rather_long_name.yaml").write_text(
        PIPE.replace("name: echo", "name: echo_with_a_rather_long_name")
    )
    monkeypatch.setenv("WORKBENCH_PIPELINE_DIR", str(tmp_path / "pipelines"))
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    from workbench.config import get_settings

    get_settings.cache_clear()


def test_runs_list_fits_80_columns(tmp_path, monkeypatch):
    _env(tmp_path, monkeypatch)
    runner = CliRunner()
    for text in ("short", "x" * 500):
        r = runner.invoke(app, ["run", "echo_with_a_rather_long_name", "--input", json.dumps({"text": text})])
        assert r.exit_code == 0, r.output
    listed = runner.invoke(app, ["runs", "list"], env={"COLUMNS": "80"})
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert len([ln for ln in lines if "succeeded" in ln]) == 2
    assert max(len(ln) for ln in lines) <= 80, "\n".join(lines)


def test_run_explain_keeps_stdout_json(tmp_path, monkeypatch):
    _env(tmp_path, monkeypatch)
    r = CliRunner().invoke(
        app, ["run", "echo_with_a_rather_long_name", "--input", '{"text": "hi"}', "--explain"], env={"COLUMNS": "80"}
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"text": "hi", "length": 2}


def test_kb_check_wraps_long_lists(tmp_path):
    """`kb check` on a 10,000-rule file printed every rule name on one 70 KB line."""
    rules = ["(deftemplate t (slot x))"] + [
        f"(defrule rule-{i} (t (x {i})) => (assert (t (x {i + 1}))))" for i in range(300)
    ]
    (tmp_path / "many.clp").write_text("\n".join(rules))
    r = CliRunner().invoke(app, ["kb", "check", str(tmp_path / "many.clp")], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert "... 100 more" in r.stdout and "... 200 more rules (--json lists every one)" in r.stdout


def test_kb_ask_answers_from_stdin_keep_stdout_json():
    """Each answer typed at a question added a space to stdout (click's prompt), so `--json` broke."""
    from pathlib import Path

    zoo = Path(__file__).resolve().parents[2] / "knowledge_bases" / "zoo.clp"
    r = CliRunner().invoke(app, ["kb", "ask", str(zoo), "(animal ?a)", "--json"], input="yes\n" * 6)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answers"]
    eof = CliRunner().invoke(app, ["kb", "ask", str(zoo), "(animal ?a)", "--json"], input="")
    assert eof.exit_code == 1 and eof.stdout == "" and "end of input" in eof.stderr
