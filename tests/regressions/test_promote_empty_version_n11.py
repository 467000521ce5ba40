"""Regression (n11, newcomer walk-through): `PUT /v1/pipelines/NAME/stages/production {"version": ""}`
answered 200 and promoted the pipeline's only stored version: an empty prefix matches every version
(with several it would be "ambiguous"), so a client that lost the version it meant to send moved the
production label. `workbench pipeline promote NAME ""` did the same. Both refuse it now."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import served_with_empty_folders

    with served_with_empty_folders(tmp_path_factory.mktemp("promote")) as live:
        yield live


def test_an_empty_version_is_refused_and_no_label_moves(server):
    doc = (
        "name: p\nnodes:\n  - {id: in, type: input}\n  - {id: out, type: output, fields: {v: input}}\n"
        "edges:\n  - {from: in, to: out}\n"
    )
    put = httpx.put(f"{server.url}/v1/pipelines/p", content=doc, headers={"content-type": "application/yaml"})
    assert put.status_code == 201, put.text
    r = httpx.put(f"{server.url}/v1/pipelines/p/stages/production", json={"version": ""})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["param"] == "body.version"
    assert httpx.get(f"{server.url}/v1/pipelines/p/versions").json()["stages"] == {}


def test_the_cli_refuses_an_empty_version():  # the per-test store of tests/conftest.py
    runner = CliRunner()
    saved = runner.invoke(app, ["pipeline", "save", "pipelines/demo_intents.yaml"])
    assert saved.exit_code == 0, saved.output
    r = runner.invoke(app, ["pipeline", "promote", "demo_intents", ""])
    assert r.exit_code == 2, r.output
    assert "VERSION is empty" in r.output
    versions = runner.invoke(app, ["pipeline", "versions", "demo_intents", "--json"])
    assert '"stages": []' in versions.output
