"""Regression: NaN / Infinity in a run's input (accepted by Python's JSON parser from `--input`, a
JSONL file or an API body) passed the input schema, since `minimum`/`maximum` never reject NaN; the
run was recorded with NaN inputs and rules saw `nan`. Now an InputValidationError naming the node and
JSON path, and nothing is recorded."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from cli.app import app
from workbench import Workbench
from workbench.pipeline import InputValidationError
from workbench.pipeline.schema import check_json_numbers

PIPE = """name: clamp
nodes:
  - id: reading
    type: input
    schema:
      type: object
      required: [values]
      properties:
        values: {type: array, items: {type: number, minimum: 0, maximum: 16}}
  - id: out
    type: output
    fields:
      n: "len(input.values)"
edges:
  - {from: reading, to: out}
"""


def test_check_json_numbers_names_the_path():
    check_json_numbers("n", {"a": [1.0, 2, "x", None, True]})
    for bad, path in (({"a": [0.0, math.nan]}, "$.a[1]"), ({"b": {"c": -math.inf}}, "$.b.c"), (math.inf, "$")):
        with pytest.raises(InputValidationError) as e:
            check_json_numbers("n", bad)
        assert e.value.node == "n" and e.value.field == path and "not a finite JSON number" in e.value.message


async def test_nan_input_is_refused_and_not_recorded(tmp_path):
    pipes = tmp_path / "pipelines"
    pipes.mkdir()
    (pipes / "clamp.yaml").write_text(PIPE)
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=pipes, model_catalog=tmp_path / "none.yaml") as wb:
        assert (await wb.run("clamp", {"values": [1.0, 2.0]})).outputs["n"] == 2
        before = len(wb.list_runs())
        with pytest.raises(
            InputValidationError,
            match=r"^input\.values\[1\]: NaN: not a finite JSON number .*\(input node 'reading'\)$",
        ):
            await wb.run("clamp", {"values": [1.0, math.nan]})
        assert len(wb.list_runs()) == before


def test_cli_run_nan_input(tmp_path, monkeypatch):
    pipes = tmp_path / "pipelines"
    pipes.mkdir()
    (pipes / "clamp.yaml").write_text(PIPE)
    monkeypatch.setenv("WORKBENCH_PIPELINE_DIR", str(pipes))
    res = CliRunner().invoke(app, ["run", "clamp", "--input", '{"values": [Infinity]}'])
    assert res.exit_code == 1 and "input.values[0]: a number too large for a float (or Infinity)" in res.output, (
        res.output
    )
