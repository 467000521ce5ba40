"""A full model queue met by a backward-chaining goal node (a `;@model` relation asks demo-digits) refuses
the run with 429 `queue_full` and Retry-After, as a model node's full queue does, and records nothing; the
same for `POST /v1/kb/NAME/ask`. r12 made `run_goal` and the model-backed relations pass
`neural.errors.QueueFullError` through unchanged (before, the goal node turned it into a failed run,
500 `run_failed`, recorded); this pins that path. Over a real uvicorn server on 127.0.0.1.

The queue is filled in-process with rows submitted `hold=True` (queued, the batcher's worker not woken)
under a 60 s batching delay, so it stays full without any timing; they are cancelled afterwards and
never reach the model."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import LiveServer, served_with_demo_digits  # noqa: E402

CASE = Path(__file__).parent / "cases" / "backward_models" / "digits_model_backed.clp"
QUEUE = 2

PIPELINE = (CASE.parent / "read_goal.yaml").read_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[LiveServer, object]]:
    tmp = tmp_path_factory.mktemp("goal-queue-full")
    (tmp / "kb").mkdir()
    shutil.copy(CASE, tmp / "kb" / "digits.clp")
    batching = {"max_batch_size": 64, "max_queue_delay_ms": 60_000, "max_queue_size": QUEUE}
    with served_with_demo_digits(tmp, {"read_goal": PIPELINE}, batching=batching) as served:
        yield served


def _runs(url: str) -> int:
    return len(httpx.get(url + "/v1/runs", params={"pipeline": "read_goal", "limit": 100}).json()["runs"])


def _queue_full(r: httpx.Response) -> None:
    assert r.status_code == 429, r.text
    assert r.json()["error"]["code"] == "queue_full", r.json()
    assert int(r.headers["retry-after"]) >= 1, r.headers


def test_a_goal_node_meeting_a_full_model_queue_is_refused_with_429(server):
    live, wb = server
    entry = wb.catalog.get("demo-digits")
    hogs = [entry.submit({"pixels": np.zeros((1, 64), np.float32)}, hold=True) for _ in range(QUEUE)]
    try:
        runs = _runs(live.url)
        predict = live.url + "/v1/pipelines/read_goal/predict"
        _queue_full(httpx.post(predict, json={"input": {"image": "x"}}, timeout=60))
        _queue_full(httpx.post(live.url + "/v1/kb/digits/ask", json={"goal": "(read img0 ?l)"}, timeout=60))
        assert _runs(live.url) == runs  # refused, not a failed run: nothing recorded
    finally:
        cancelled = [h.cancel() for h in hogs]
    assert cancelled == [True] * QUEUE  # still queued when the requests were refused: the model never ran them
