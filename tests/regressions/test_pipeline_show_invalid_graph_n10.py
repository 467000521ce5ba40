"""Regression (n10, newcomer walk-through): `workbench pipeline show FILE` on a pipeline whose
graph has a cycle died with networkx's traceback (NetworkXUnfeasible from the layout). It now
prints the located problems as `pipeline check` does and exits 1; a valid file still draws."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app

CYCLE = """name: loop
nodes:
  - id: in
    type: input
  - id: mid
    type: output
    fields: {x: "input.x"}
  - id: out
    type: output
    fields: {x: "input.x"}
edges:
  - {from: in, to: mid}
  - {from: mid, to: out}
  - {from: out, to: in}
"""


def test_show_of_a_cycle_names_it(tmp_path):
    f = tmp_path / "loop.yaml"
    f.write_text(CYCLE)
    r = CliRunner().invoke(app, ["pipeline", "show", str(f)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 1, r.output
    assert f"{f}:3:5: node 'in', field 'edges': the graph has a cycle: in -> mid -> out -> in" in r.stderr


def test_show_of_a_valid_file_still_draws(tmp_path):
    f = tmp_path / "line.yaml"
    f.write_text(
        CYCLE.replace("  - {from: out, to: in}\n", "").replace(
            'type: output\n    fields: {x: "input.x"}\n  - id: out', "type: explain\n  - id: out", 1
        )
    )
    r = CliRunner().invoke(app, ["pipeline", "show", str(f)], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    assert "[input] in" in r.stdout and "[explain] mid" in r.stdout and "[output] out" in r.stdout


def test_list_keeps_one_line_per_pipeline_at_80_columns(tmp_path, monkeypatch):
    """`pipeline list` wrapped a 60-word description over some 70 lines of a 6-column table."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    long = "a description of many words " * 12
    for name in ("first_pipeline_with_a_long_name", "second"):
        doc = CYCLE.replace("name: loop", f"name: {name}\ndescription: {long}").replace("  - {from: out, to: in}\n", "")
        (folder / f"{name}.yaml").write_text(doc)
    monkeypatch.setenv("WORKBENCH_PIPELINE_DIR", str(folder))
    from workbench.config import get_settings

    get_settings.cache_clear()
    r = CliRunner().invoke(app, ["pipeline", "list"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80, r.stdout
    rows = [ln for ln in lines if ln.startswith(("first_pipeline", "second"))]
    assert len(rows) == 2, r.stdout  # each on one line, the whole name kept
    assert rows[0].startswith("first_pipeline_with_a_long_name ") and " a descrip" in rows[0]
    short = [ln for ln in CliRunner().invoke(app, ["pipeline", "list"], env={"COLUMNS": "120"}).stdout.splitlines()]
    assert any(ln.startswith("second ") and "second.yaml" in ln for ln in short)  # a cut path keeps its tail
