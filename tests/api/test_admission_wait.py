"""The admission queue's wait bound (Little's law): a request whose expected wait, admitted /
measured throughput, passes `max_wait_s` plus the shortest recent run is refused with 429 and a
Retry-After; a cold queue (no throughput measured yet) is not refused."""

from __future__ import annotations

import time

import pytest

from workbench.serving.admission import MIN_ADMITTED, AdmissionQueue
from workbench.serving.errors import OverloadedError


def _serve(q: AdmissionQueue, n: int, run_s: float, gap_s: float) -> None:
    """n answered requests, each holding its slot `run_s`, one every `gap_s` (so <= 1/gap_s answers/s)."""
    for _ in range(n):
        t = q.admit("p")
        time.sleep(run_s)
        t.release()
        time.sleep(gap_s)


def test_expected_wait_past_the_bound_is_refused_with_retry_after():
    q = AdmissionQueue(1000, max_wait_s=0.05)
    _serve(q, 24, 0.01, 0.0)  # runs of 0.01 s back to back: <= 100 answers per busy second
    assert q.throughput("p") is not None and q.throughput("p") <= 110
    held = [q.admit("p") for _ in range(MIN_ADMITTED)]  # 8 waiting: 8 / 100 = 0.08 s > 0.05 s
    with pytest.raises(OverloadedError) as exc:
        q.admit("p")
    assert exc.value.retry_after_s >= 1 and "pipeline_max_wait_s" in str(exc.value)
    for t in held:
        t.release()
    q.admit("p").release()  # admitted again once the queue drained


def test_a_cold_queue_or_no_wait_bound_admits_up_to_the_count():
    cold = AdmissionQueue(1000, max_wait_s=0.01)
    held = [cold.admit("p") for _ in range(50)]  # no throughput measured yet: only the count bounds
    for t in held:
        t.release()
    no_bound = AdmissionQueue(1000, max_wait_s=None)
    _serve(no_bound, 20, 0.01, 0.0)
    held = [no_bound.admit("p") for _ in range(100)]  # only the count limit applies
    for t in held:
        t.release()


def test_idle_time_does_not_lower_the_measured_throughput():
    """Regression: the rate was taken over wall time, so after a pause the queue thought the
    server slow (a closed loop at concurrency 16 got 429s after an idle second: '8 requests
    admitted would wait about 14.0 s at 1 answers/s')."""
    q = AdmissionQueue(1000, max_wait_s=0.5)
    _serve(q, 12, 0.005, 0.0)  # ~200 answers per busy second
    time.sleep(1.0)  # idle between answers of the window
    _serve(q, 12, 0.005, 0.0)
    assert q.throughput("p") > 50
    held = [q.admit("p") for _ in range(20)]  # 20 / ~200 = 0.1 s expected: admitted
    for t in held:
        t.release()


class _Clock:
    """A monotonic clock the test moves by hand (the admission queue reads `time.monotonic`)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


def test_a_sustained_overload_keeps_the_admitted_count_at_the_wait_bound(monkeypatch):
    """Regression (issue 14, 3x overload of demo_digits): the bound added the shortest of the last
    128 runs to max_wait_s, but under a sustained overload every run had queued, so the shortest
    run grew with the queue the bound let in (admitted answers took 1.5-2.3 s at max_wait_s = 1).
    Only runs admitted while fewer than MIN_ADMITTED were in count as the service time now."""
    from workbench.serving import admission

    clock = _Clock()
    monkeypatch.setattr(admission, "time", clock)
    q = AdmissionQueue(100_000, max_wait_s=0.5)
    for _ in range(24):  # light load first: one run at a time, 10 ms each (100 runs/s)
        t = q.admit("p")
        clock.t += 0.01
        t.release()
    # then 3x overload for 30 s: the server answers the oldest admitted run every 10 ms (FIFO),
    # three requests arrive in the same 10 ms
    queue, most, refused = [], 0, 0
    for _ in range(3000):
        for _ in range(3):
            try:
                queue.append(q.admit("p"))
            except OverloadedError:
                refused += 1
        most = max(most, len(queue))
        clock.t += 0.01
        queue.pop(0).release()
    # expected wait (admitted / 100 per s) <= 0.5 s + the 10 ms service time: about 51 admitted
    assert most <= 52, most
    assert q.service_s("p") == pytest.approx(0.01)  # queued runs (0.5 s each) did not count
    assert refused > 3000  # two in three refused


def test_refusals_without_a_run_are_not_counted_as_answers():
    """A request refused for its input (no run) holds its slot a few milliseconds: counted as an
    answer it would raise the measured throughput and lower the service time, so a stream of bad
    inputs would make the queue admit more than the pipeline's runs can serve."""
    q = AdmissionQueue(1000, max_wait_s=0.05)
    _serve(q, 20, 0.01, 0.0)
    rate, service = q.throughput("p"), q.service_s("p")
    for _ in range(200):
        q.admit("p").release(counted=False)
    assert q.throughput("p") == rate and q.service_s("p") == service
    assert q.admitted("p") == 0


def test_bad_inputs_over_http_leave_the_admission_estimates_alone(digits_server):
    import httpx

    serving = digits_server.app.state.serving
    with httpx.Client(base_url=digits_server.url, timeout=30) as client:
        for _ in range(40):  # an image of 63 pixels: 422, no run
            r = client.post("/v1/pipelines/demo_digits/predict", json={"input": {"id": "1", "images": [[0.5] * 63]}})
            assert r.status_code == 422, r.text
    queue = serving._admission()
    assert queue.throughput("demo_digits") is None  # no answers counted (16 are needed for an estimate)
    assert queue.admitted("demo_digits") == 0
