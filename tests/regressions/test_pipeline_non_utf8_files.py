"""Regression: a pipeline YAML file or a `run --input-file` JSONL file that is not UTF-8 gave a
UnicodeDecodeError traceback; now a located one-line error and exit 1 (check) / 2 (run)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.app import app
from workbench.pipeline import Pipeline, PipelineValidationError


def test_pipeline_file_not_utf8(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(PipelineValidationError, match="not UTF-8 text"):
        Pipeline.from_file(f)
    for cmd in (["pipeline", "check", str(f)], ["pipeline", "show", str(f)], ["pipeline", "save", str(f)]):
        res = CliRunner().invoke(app, cmd)
        assert res.exit_code == 1, (cmd, res.output)
        assert f"{f}: " in res.output and "not UTF-8 text (byte 9" in res.output
        assert isinstance(res.exception, SystemExit), res.exception


def test_run_input_file_not_utf8(tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'{"text": "caf\xe9"}\n')
    res = CliRunner().invoke(app, ["run", "anything", "--input-file", str(f)])
    assert res.exit_code == 2 and "not UTF-8 text (byte 13" in res.output
    assert isinstance(res.exception, SystemExit), res.exception
