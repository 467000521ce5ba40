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
