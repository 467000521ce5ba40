"""Regression: `runs replay --kb NAME=FILE` with a name the pipeline does not use printed
"no change" and exited 0 (the edit was silently ignored); a non-UTF-8 rule file gave a
UnicodeDecodeError traceback. Both are now clear errors (exit 1) and no replay run is recorded."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from workbench import Workbench
from workbench.pipeline import KnowledgeBaseError, NotFoundError

RULES = """(defrule big (n ?x&:(> ?x 10)) => (assert (size big)))
(defrule small (n ?x&:(<= ?x 10)) => (assert (size small)))
"""
PIPE = """name: sizer
nodes:
  - id: inp
    type: input
    schema: {type: object, required: [n], properties: {n: {type: integer}}}
    facts:
      - template: n
        values: ["input.n"]
  - id: judge
    type: rules
    knowledge_base: sizer
  - id: out
    type: output
    fields:
      size: "size[0]"
edges:
  - {from: inp, to: judge}
  - {from: judge, to: out}
"""


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    kb, pipes = tmp_path / "knowledge_bases", tmp_path / "pipelines"
    kb.mkdir()
    pipes.mkdir()
    (kb / "sizer.clp").write_text(RULES)
    (pipes / "sizer.yaml").write_text(PIPE)
    monkeypatch.setenv("WORKBENCH_KNOWLEDGE_BASE_DIR", str(kb))
    monkeypatch.setenv("WORKBENCH_PIPELINE_DIR", str(pipes))
    return kb, pipes


async def test_replay_refuses_unused_kb_name_and_non_utf8_file(dirs, tmp_path):
    kb, pipes = dirs
    bad = tmp_path / "latin1.clp"
    bad.write_bytes(b"; caf\xe9\n" + RULES.encode())
    with Workbench(knowledge_base_dir=kb, pipeline_dir=pipes, model_catalog=tmp_path / "none.yaml") as wb:
        run = await wb.run("sizer", {"n": 3})
        assert run.status == "succeeded" and "small" in json.dumps(run.outputs["size"])
        n_runs = len(wb.list_runs())
        with pytest.raises(NotFoundError, match="does not use it; it uses: sizer"):
            await wb.replay(run.run_id, knowledge_bases={"nope": str(kb / "sizer.clp")})
        with pytest.raises(KnowledgeBaseError, match="not UTF-8"):
            await wb.replay(run.run_id, knowledge_bases={"sizer": str(bad)})
        assert len(wb.list_runs()) == n_runs  # nothing half-written


def test_cli_replay_bad_kb(dirs, tmp_path):
    kb, _ = dirs
    runner = CliRunner()
    res = runner.invoke(app, ["run", "sizer", "--input", '{"n": 3}', "--json"])
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.stdout.strip().splitlines()[-1])["run_id"]
    res = runner.invoke(app, ["runs", "replay", run_id, "--kb", f"nope={kb / 'sizer.clp'}"])
    assert res.exit_code == 1 and "knowledge base 'nope' not found" in res.output and "no change" not in res.output
    bad = tmp_path / "latin1.clp"
    bad.write_bytes(b"\xff")
    res = runner.invoke(app, ["runs", "replay", run_id, "--kb", f"sizer={bad}"])
    assert res.exit_code == 1 and "not UTF-8" in res.output
    assert isinstance(res.exception, SystemExit)  # a clean exit, not a traceback
