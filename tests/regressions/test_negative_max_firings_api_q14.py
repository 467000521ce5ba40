"""Regression (q14): `workbench kb run --max-firings -1` runs without a firing limit, as CLIPS's `(run -1)`
does, but `POST /v1/kb/NAME/run` refused `"max_firings": -1` (422, "greater than or equal to 0") and a
pipeline's rules node refused `max_firings: -1`. The API and pipeline documents now read the limit as the
CLI and CLIPS do (clipspy is the oracle; test_kb_run_firing_limit_zero_q13.py holds the CLI side)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest
from test_kb_run_firing_limit_zero_q13 import FACTS, KB, _clips, _kb_run, _ours

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

from workbench.pipeline import Pipeline, PipelineValidationError  # noqa: E402


def test_the_api_and_the_cli_read_a_negative_limit_as_no_limit(tmp_path):
    fired, facts = _clips(-1)
    assert fired > 2
    cli = _kb_run("--max-firings", "-1")
    assert cli.exit_code == 0, cli.output
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    shutil.copy(KB, kb_dir / "animals_limit.clp")
    with served_workbench(make_settings(tmp_path), knowledge_base_dir=kb_dir, pipeline_dir=tmp_path / "p") as live:
        run = live.url + "/v1/kb/animals_limit/run"
        for limit in (-1, -7):
            r = httpx.post(run, json={"facts": json.loads(FACTS.read_text()), "max_firings": limit}, timeout=60)
            assert r.status_code == 200, r.text  # before the fix: 422
            doc = r.json()
            assert len(doc["firings"]) == fired == len(json.loads(cli.stdout)["firings"])
            assert sorted(map(repr, _ours(doc))) == sorted(map(repr, facts))
        r = httpx.post(run, json={"facts": json.loads(FACTS.read_text()), "max_firings": 2}, timeout=60)
        assert r.status_code == 422 and r.json()["error"]["code"] == "limit_exceeded", r.text


RULES_NODE = """
name: limits
nodes:
  - {id: in, type: input}
  - {id: zoo, type: rules, knowledge_base: animals_limit, %s}
  - {id: out, type: output, fields: {n: "1"}}
edges:
  - {from: in, to: zoo}
  - {from: zoo, to: out}
"""


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ("max_firings: -1", None),
        ("max_firings: 0", None),
        ("max_firings: x", "expected an integer, got 'x'"),
        ("max_firings: true", "expected an integer, got True"),
    ],
)
def test_a_rules_node_reads_max_firings_as_clips_does(field, problem):
    if problem is None:
        assert Pipeline.from_yaml(RULES_NODE % field).nodes["zoo"].get("max_firings") is not None
    else:
        with pytest.raises(PipelineValidationError, match=f"field 'max_firings': {problem}"):
            Pipeline.from_yaml(RULES_NODE % field)


def test_other_limits_of_a_node_stay_non_negative():
    goal = RULES_NODE.replace("type: rules", "type: goal, goal: '(identified ?a)'") % "max_answers: -1"
    with pytest.raises(PipelineValidationError, match="field 'max_answers': expected a non-negative integer, got -1"):
        Pipeline.from_yaml(goal)
