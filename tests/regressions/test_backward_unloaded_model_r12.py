"""Regression (r12, left by q14): after `POST /v2/repository/models/demo-digits/unload`, a
backward-chaining relation bound to demo-digits (`;@model`) answered `/v1/kb/NAME/ask` with 400
(`AskError`), and a pipeline goal node over it recorded a failed run (500 `run_failed`), while a
pipeline model node needing the model is refused with 503 `unavailable` and Retry-After (commit
e6bd93c). Now all three are refused alike: 503 `unavailable`, Retry-After 30, naming the model (and
the goal node), nothing recorded, the model left unloaded. Over a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import API_KEY, LiveServer, served_with_demo_digits  # noqa: E402

KEY = {"Authorization": f"Bearer {API_KEY}"}
CASE = Path(__file__).parent / "cases" / "backward_models" / "digits_model_backed.clp"

PIPELINE = (CASE.parent / "read_goal.yaml").read_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[LiveServer, object]]:
    tmp = tmp_path_factory.mktemp("backward-unloaded")
    with served_with_demo_digits(tmp, {"read_goal": PIPELINE}, {"digits.clp": CASE.read_text()}) as served:
        yield served


def _runs(url: str) -> int:
    return len(httpx.get(url + "/v1/runs", params={"pipeline": "read_goal", "limit": 100}).json()["runs"])


def _refused(r: httpx.Response, message: str) -> None:
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "unavailable" and r.headers["retry-after"] == "30", (error, r.headers)
    assert error["message"] == message


def test_ask_and_goal_nodes_needing_an_unloaded_model_are_refused_like_predict(server):
    live, wb = server
    ask, predict = live.url + "/v1/kb/digits/ask", live.url + "/v1/pipelines/read_goal/predict"
    goal = {"goal": "(read img0 ?l)"}
    assert httpx.post(ask, json=goal, timeout=60).status_code == 200
    assert httpx.post(predict, json={"input": {"image": "other"}}, timeout=60).status_code == 200
    assert httpx.post(live.url + "/v2/repository/models/demo-digits/unload", headers=KEY).status_code == 200
    runs = _runs(live.url)

    # before the fix: 400 (AskError) and a recorded failed run answered 500 run_failed
    _refused(
        httpx.post(ask, json=goal, timeout=60),
        "model 'demo-digits' was unloaded; POST /v2/repository/models/demo-digits/load loads it again",
    )
    _refused(
        httpx.post(predict, json={"input": {"image": "other"}}, timeout=60),
        "pipeline 'read_goal' needs model 'demo-digits' (node 'read'), which was unloaded; "
        "POST /v2/repository/models/demo-digits/load loads it again",
    )
    assert _runs(live.url) == runs  # refused, not recorded
    assert not wb.catalog.is_loaded("demo-digits")

    assert httpx.post(live.url + "/v2/repository/models/demo-digits/load", headers=KEY).status_code == 200
    assert httpx.post(ask, json=goal, timeout=60).json()["proved"]
    assert httpx.post(predict, json={"input": {"image": "other"}}, timeout=60).status_code == 200
