"""Regression (n10, newcomer walk-through): the scenario and decision-table routes answered a path
outside the knowledge-base folder, or a file of the wrong kind, with 422 and `"param": null`,
where every other 422 of the API names the request field at fault. They now name `query.file`
(GET) or `body.file` (POST /v1/scenarios/run). Real server on 127.0.0.1."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import make_settings, served_workbench

    tmp = tmp_path_factory.mktemp("rule-files")
    kbs = tmp / "knowledge_bases"
    kbs.mkdir()
    root = Path(__file__).resolve().parents[2]
    for f in ("animals.clp", "animals.test.yaml"):
        shutil.copy(root / "knowledge_bases" / f, kbs / f)
    settings = make_settings(tmp)
    with served_workbench(settings, knowledge_base_dir=kbs, pipeline_dir=tmp / "pipelines") as live:
        yield live


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "param"),
    [
        ("GET", "/v1/scenarios/file", {"params": {"file": "../../etc/passwd"}}, "query.file"),
        ("GET", "/v1/scenarios/file", {"params": {"file": "animals.clp"}}, "query.file"),
        ("POST", "/v1/scenarios/run", {"json": {"file": "/etc/passwd"}}, "body.file"),
        ("GET", "/v1/decision-tables/table", {"params": {"file": "../x.csv"}}, "query.file"),
        ("GET", "/v1/decision-tables/table", {"params": {"file": "animals.clp"}}, "query.file"),
    ],
)
def test_refused_paths_name_their_field(server, method, path, kwargs, param):
    r = httpx.request(method, server.url + path, timeout=30, **kwargs)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "validation_failed" and error["param"] == param, error


def test_a_good_file_still_answers(server):
    r = httpx.post(server.url + "/v1/scenarios/run", json={"file": "animals.test.yaml"}, timeout=60)
    assert r.status_code == 200 and r.json()["failed"] == 0 and r.json()["passed"] >= 1, r.text
