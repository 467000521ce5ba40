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
