"""Regression (n10 #15): predict on a demo pipeline accepted and recorded unknown input fields
(`{"text": "hi", "extra": 1}`), so a misspelt field name passed silently: the demo pipelines' input
schemas did not set `additionalProperties: false`. They do now; the typo is refused with a 422
located at the field, over a real uvicorn server, and `demo --write-inputs` writes files the
schemas accept (the generation prompts' expected outcome moved to demo_generate.labels.jsonl)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import ROOT, make_settings, served_workbench  # noqa: E402

from cli.app import app  # noqa: E402

TYPOS = {
    "demo_intents": {"text": "where is my card?", "extra": 1},
    "demo_digits": {"images": [[0] * 64], "idd": "x"},
    "demo_generate": {"prompt": "ROMEO:\n", "sede": 3},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-schemas")
    settings = make_settings(
        tmp, knowledge_base_dir=str(ROOT / "knowledge_bases"), pipeline_dir=str(ROOT / "pipelines")
    )
    with served_workbench(settings) as live:
        yield live


@pytest.mark.parametrize("pipeline", sorted(TYPOS))
def test_a_misspelt_input_field_is_refused_and_located(server, pipeline):
    item = TYPOS[pipeline]
    (typo,) = [k for k in item if k not in ("text", "images", "prompt")]
    r = httpx.post(f"{server.url}/v1/pipelines/{pipeline}/predict", json={"input": item}, timeout=60)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert typo in error["message"], error
    located = [d for d in error["details"] if typo in json.dumps(d)]
    assert located, error
    runs = httpx.get(f"{server.url}/v1/runs", params={"pipeline": pipeline}, timeout=30).json()
    assert not runs.get("runs"), runs  # nothing recorded


def test_the_shipped_input_schemas_close_their_properties():
    for pipeline in TYPOS:
        doc = yaml.safe_load((ROOT / "pipelines" / f"{pipeline}.yaml").read_text())
        (node,) = [n for n in doc["nodes"] if n["type"] == "input"]
        assert node["schema"]["additionalProperties"] is False, pipeline


def test_written_demo_inputs_pass_the_schemas(tmp_path):
    from workbench.pipeline.schema import check_schema

    r = CliRunner().invoke(app, ["demo", "--write-inputs", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for pipeline in TYPOS:
        doc = yaml.safe_load((ROOT / "pipelines" / f"{pipeline}.yaml").read_text())
        (node,) = [n for n in doc["nodes"] if n["type"] == "input"]
        for line in (tmp_path / f"{pipeline}.jsonl").read_text().splitlines():
            check_schema(node["id"], node["schema"], json.loads(line))  # raises InputValidationError
    labels = [json.loads(x) for x in (tmp_path / "demo_generate.labels.jsonl").read_text().splitlines()]
    assert labels and all(set(x) == {"prompt", "expect"} for x in labels)
