"""`workbench pipeline check` locates a node's problems where the node is, also after a node the
reader skipped for an unknown type (q11: `bad3.yaml:5:5` for the expression on line 9)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli.app import app

CASES = Path(__file__).resolve().parent / "cases" / "pipeline_q11"


def test_a_skipped_node_does_not_shift_the_next_nodes_positions(monkeypatch) -> None:
    monkeypatch.chdir(CASES)
    got = CliRunner().invoke(app, ["pipeline", "check", "bad3.yaml"])
    assert got.exit_code == 1, got.output
    assert "bad3.yaml:6:5: node 'b', field 'type': unknown node type 'bogus'" in got.output
    assert "bad3.yaml:9:14: node 'c', field 'fields.v': syntax error" in got.output, got.output


def test_a_duplicate_key_is_refused_where_it_is(monkeypatch) -> None:
    """PyYAML keeps the last of two `name:` keys silently; the pipeline reader refuses it (q11)."""
    monkeypatch.chdir(CASES)
    got = CliRunner().invoke(app, ["pipeline", "check", "dupkey.yaml"])
    assert got.exit_code == 1, got.output
    assert "dupkey.yaml:2:1: field 'name': duplicate key 'name' (first at line 1, column 1)" in got.output


def test_duplicate_keys_inside_nodes_are_each_reported() -> None:
    import pytest

    from workbench.pipeline import Pipeline
    from workbench.pipeline.errors import PipelineValidationError

    text = (
        "name: x\nnodes:\n  - id: a\n    type: input\n    id: b\n"
        '  - id: c\n    type: output\n    fields: {v: "input", v: "x"}\n'
    )
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(text, "p.yaml")
    got = [(i.field, i.line, i.column) for i in ei.value.issues]
    assert got == [("nodes[0].id", 5, 5), ("nodes[1].fields.v", 8, 26)]
