"""A goal over a relation nothing defines is refused over HTTP as `workbench kb ask` refuses it (q11):
422 `validation_failed`, `param` "goal", the message `goal:1:COL: the goal uses relation ...`, for
`POST /v1/kb/{name}/ask` and `POST /v1/consultations` alike (it answered 200 proved:false / finished)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import FIXTURES, make_settings, served_workbench  # noqa: E402

WANT = "goal:1:2: the goal uses relation nosuch, which no rule, fact, template or askable defines"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("goal")
    (tmp / "kb").mkdir()
    shutil.copy(FIXTURES / "family.clp", tmp / "kb" / "family.clp")
    settings = make_settings(tmp, knowledge_base_dir=str(tmp / "kb"))
    with served_workbench(settings) as live:
        yield live


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/kb/family/ask", {"goal": "(nosuch ?x)"}),
        ("/v1/consultations", {"knowledge_base": "family", "goal": "(nosuch ?x)"}),
    ],
)
def test_a_goal_over_an_undefined_relation_is_a_422_naming_the_goal(server, path, body) -> None:
    r = httpx.post(server.url + path, json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert (err["code"], err["param"], err["message"]) == ("validation_failed", "goal", WANT)


def test_a_relation_given_in_facts_is_defined(server) -> None:
    r = httpx.post(
        server.url + "/v1/kb/family/ask", json={"goal": "(nosuch ?x)", "facts": [{"template": "nosuch", "values": [1]}]}
    )
    assert r.status_code == 200 and r.json()["proved"] is True, r.text
