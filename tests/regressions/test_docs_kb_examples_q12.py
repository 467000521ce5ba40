"""The knowledge-base examples of docs/api.md run against a shipped knowledge base (q12): the
`POST /v1/kb/{name}/run` and `/ask` bodies used slotted `parent` facts and an `(ancestor (of otto)
(is ?z))` goal that no knowledge base in knowledge_bases/ defines. Each documented body is sent, as
written, to a real server on the shipped knowledge bases; the results the text states are checked.
Also: docs/pipelines.md states the name rule `workbench pipeline check` applies (it said '.' is
allowed; workbench/names.py refuses it)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

from workbench.names import NAME_RULE  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
API_DOC = (ROOT / "docs" / "api.md").read_text()
PROSE = " ".join(API_DOC.split())  # the text's statements, line breaks as spaces
EXAMPLE = re.compile(r"`POST (/v1/kb/[\w-]+/(run|ask))` `(\{.*?\})`", re.S)


def _examples() -> dict[str, tuple[str, dict]]:
    found = {kind: (path, json.loads(body)) for path, kind, body in EXAMPLE.findall(API_DOC)}
    assert set(found) == {"run", "ask"}, found
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("docs_kb")
    settings = make_settings(tmp, knowledge_base_dir=str(ROOT / "knowledge_bases"))
    with served_workbench(settings) as live:
        yield live


def test_the_documented_run_example_runs(server) -> None:
    path, body = _examples()["run"]
    r = httpx.post(server.url + path, json=body, timeout=60)
    assert r.status_code == 200, r.text
    doc = r.json()
    (firings,) = re.findall(r"here (\d+) firings", PROSE)
    assert len(doc["firings"]) == int(firings)
    (shown,) = re.findall(r"here \d+ firings; `\((\w+) ([\w ]+)\)` among the facts", PROSE)
    assert {"template": shown[0], "values": shown[1].split()} in [
        {"template": f["template"], "values": f["slots"].get("implied")} for f in doc["facts"]
    ]


def test_the_documented_ask_example_is_answered(server) -> None:
    path, body = _examples()["ask"]
    r = httpx.post(server.url + path, json=body, timeout=60)
    assert r.status_code == 200, r.text
    doc = r.json()
    (names,) = re.findall(r"here `\?a` is ([\w, ]+)\)", PROSE)
    want = re.split(r", | and ", names.replace(", and ", " and "))
    assert doc["proved"] is True and [a["bindings"]["a"] for a in doc["answers"]] == want


def test_the_pipeline_name_rule_is_the_documented_one(tmp_path) -> None:
    from cli.app import app

    text = " ".join((ROOT / "docs" / "pipelines.md").read_text().split())
    assert NAME_RULE in text
    assert "'_', '-', '.'" not in text
    path = tmp_path / "dotted.yaml"
    path.write_text(
        'name: a.b\nnodes:\n  - {id: in, type: input}\n  - {id: out, type: output, fields: {x: "input"}}\n'
        "edges:\n  - {from: in, to: out}\n"
    )
    r = CliRunner().invoke(app, ["pipeline", "check", str(path)])
    assert r.exit_code == 1 and NAME_RULE in r.output and "character '.' is not allowed" in r.output
