"""Regression (n16, a newcomer's finding): one `/v2` infer whose Triton `timeout` parameter lay beyond what a
lock can wait (`1e18` microseconds, 31,700 years) left its deadline in the batcher's heap; the worker's next idle
wait raised OverflowError outside its error guard, the worker thread died, and every later infer of that model
waited forever while `/readyz` said 200. Now the waits are bounded, the worker survives any error choosing a
batch, and a `timeout` that does not fit a float (`1e400`, an integer of 400 digits) is a 400 naming the field."""

from __future__ import annotations

import time

import httpx
import pytest
from api_live import API_KEY, served_with_demo_digits

from neural.batching.batcher import DynamicBatcher
from neural.batching.config import BatcherConfig

ZEROS = ",".join(["0"] * 64)


def _infer(url: str, parameters: str = "") -> httpx.Response:
    body = f'{{"inputs":[{{"name":"pixels","shape":[1,1,64],"datatype":"FP32","data":[{ZEROS}]}}]{parameters}}}'
    return httpx.post(
        f"{url}/v2/models/demo-digits/infer",
        content=body,
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        timeout=120,
    )


def test_a_far_deadline_leaves_the_model_serving(tmp_path):
    with served_with_demo_digits(tmp_path, {}) as (live, _):
        first = _infer(live.url, ',"parameters":{"timeout":1e18}')
        assert first.status_code == 200, first.text
        time.sleep(0.2)  # the worker goes idle with the far deadline still in its heap (where it died)
        assert _infer(live.url).status_code == 200  # hung forever before
        for too_big in ("1e400", "1" + "0" * 400):
            bad = _infer(live.url, f',"parameters":{{"timeout":{too_big}}}')
            assert bad.status_code == 400, bad.text
            assert "parameters.timeout: must be a finite number of microseconds" in bad.json()["error"]
        assert _infer(live.url).status_code == 200


def test_the_batcher_worker_survives_a_deadline_beyond_the_longest_wait():
    batcher = DynamicBatcher("far", lambda xs, _pad_to: [x * 2 for x in xs], BatcherConfig(max_queue_delay_ms=1))
    try:
        assert batcher.submit(1, timeout_s=1e13).result(60) == 2  # ~317,000 years > threading.TIMEOUT_MAX
        worker = batcher._thread
        assert batcher._deadlines  # the finished request's deadline stays in the heap until pruned
        time.sleep(0.1)  # the worker's idle wait on that far deadline (where it died)
        assert worker is not None and worker.is_alive()
        assert batcher.submit(3, timeout_s=5).result(60) == 6
    finally:
        batcher.close()


@pytest.mark.parametrize("timeout_s", [float("inf"), 1e300])
def test_request_result_waits_with_a_far_or_infinite_deadline(timeout_s):
    batcher = DynamicBatcher("far2", lambda xs, _pad_to: list(xs), BatcherConfig(max_queue_delay_ms=1))
    try:
        assert batcher.submit("x", timeout_s=timeout_s).result() == "x"  # `result(None)` waited OverflowError
    finally:
        batcher.close()
