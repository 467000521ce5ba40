"""Triton's queue policy on predictions (issue 14, overload): an admitted run that no worker starts
within `serving.pipeline_max_wait_s` of its admission is answered 429 `queue_full` with Retry-After
and never runs (no node, no model call, no recorded run); runs started in time answer as usual.

A real uvicorn server on 127.0.0.1 with a one-thread run pool, kept busy by a task of our own."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from api_live import DIGITS_ONNX, LiveServer, make_settings, serve

from workbench.serving import Serving

PIPELINE = """
name: start_digit
nodes:
  - id: scan
    type: input
    schema: {type: object, required: [pixels], properties: {pixels: {type: array, minItems: 64, maxItems: 64}}}
  - id: read
    type: model
    model: digits
    inputs: {pixels: "[input.pixels]"}
    facts:
      - template: digit
        slots: {label: "argmax(logits)"}
  - id: result
    type: output
    fields: {label: "digit.label"}
edges:
  - {from: scan, to: read}
  - {from: read, to: result}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LiveServer]:
    from neural.loaders import load_onnx
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("start")
    (tmp / "pipelines").mkdir()
    (tmp / "pipelines" / "start_digit.yaml").write_text(PIPELINE)
    settings = make_settings(tmp, serving={"pipeline_max_wait_s": 0.3, "run_workers": 1, "predict_timeout_s": 20.0})
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "x.yaml"
    )
    wb.register_model_entry(load_onnx(DIGITS_ONNX, name="digits", task="classification", intra_op_threads=1))
    srv = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
    srv.wb = wb
    yield srv
    srv.stop()
    wb.close()


def _admitted(pipeline: str) -> float:
    """The gauge `workbench_pipeline_requests_admitted` of `pipeline` (0 when absent)."""
    from neural.metrics import METRICS_REGISTRY

    value = METRICS_REGISTRY.get_sample_value("workbench_pipeline_requests_admitted", {"pipeline": pipeline})
    return value or 0.0


def _predict(url: str) -> httpx.Response:
    return httpx.post(url + "/v1/pipelines/start_digit/predict", json={"input": {"pixels": [0.0] * 64}}, timeout=30)


def test_a_run_no_worker_starts_in_time_is_refused_and_never_runs(server):
    wb = server.wb
    first = _predict(server.url)  # warm: pipeline resolved, model loaded
    assert first.status_code == 200, first.text
    batches0 = wb.get_model("digits").batcher.stats.requests
    runs0 = len(wb.list_runs("start_digit", limit=1000))
    release = threading.Event()
    blocker = wb.pool.submit(release.wait, 30)  # the pool's only thread is busy
    try:
        answers: list[httpx.Response] = []
        clients = [threading.Thread(target=lambda: answers.append(_predict(server.url))) for _ in range(3)]
        for c in clients:
            c.start()
        # all three admitted (each START_BY = its admission + 0.3 s), then past it: a fixed 0.8 s from the
        # clients' start left a loaded machine too little time to admit them before the pool was freed
        deadline = time.monotonic() + 60
        while _admitted("start_digit") < 3:
            assert time.monotonic() < deadline, f"{_admitted('start_digit')} of 3 requests admitted"
            time.sleep(0.01)
        time.sleep(0.35)  # a lower bound on the time since the last admission: past pipeline_max_wait_s = 0.3
    finally:
        release.set()
    for c in clients:
        c.join(30)
    blocker.result(5)
    assert [r.status_code for r in answers] == [429, 429, 429], [r.text for r in answers]
    for r in answers:
        err = r.json()["error"]
        assert err["code"] == "queue_full" and "pipeline_max_wait_s=0.3" in err["message"], err
        assert int(r.headers["Retry-After"]) >= 1
    time.sleep(0.3)
    assert wb.get_model("digits").batcher.stats.requests == batches0  # no model call
    assert len(wb.list_runs("start_digit", limit=1000)) == runs0  # nothing recorded
    again = _predict(server.url)  # the pool is free again: served
    assert again.status_code == 200 and again.json()["outputs"] == first.json()["outputs"]


def test_runs_started_in_time_are_served():
    """The deadline is checked when a worker picks the run's first step up, not against its whole duration."""
    import asyncio

    from workbench.pipeline.handoff import START_BY, RunPool, StartDeadlineError, run_steps

    pool = RunPool(1)
    seen: list[str] = []

    def slow_step(outcomes):
        seen.append("ran")
        time.sleep(0.3)  # longer than the deadline: it started in time, so it finishes
        return []

    async def main(deadline_in: float):
        token = START_BY.set(time.monotonic() + deadline_in)
        try:
            return await run_steps(pool, slow_step, None, lambda calls: calls, lambda: None)
        finally:
            START_BY.reset(token)

    assert asyncio.run(main(0.1)) == ([], None) and seen == ["ran"]
    with pytest.raises(StartDeadlineError):
        asyncio.run(main(-0.01))
    assert seen == ["ran"]  # the late run's step never ran
    pool.shutdown()
