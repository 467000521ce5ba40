"""`call_with_deadline` never lets a deadline's exception reach the caller's thread after the work ended.

Regression: the exception was raised in the caller's own thread; one sent just as the work returned
could land in the caller's `finally` before the timer was stopped, and the timer then kept raising
into whatever the caller ran next (a pytest INTERNALERROR in a full run of tests/chaining).
"""

from __future__ import annotations

import threading
import time

import pytest

from chaining.forward.deadline import DeadlineExceeded, call_with_deadline


def _swallowing_work(until: float) -> str:
    """Busy Python that swallows every exception (as a bare `except:` in experta can) until `until`."""
    while time.perf_counter() < until:
        try:
            sum(range(200))
        except BaseException:  # noqa: BLE001 - the point of the test
            pass
    return "done"


def test_work_runs_in_another_thread_and_its_result_comes_back():
    caller = threading.get_ident()
    assert call_with_deadline(threading.get_ident, 5.0) != caller
    assert call_with_deadline(lambda: 41 + 1, 5.0) == 42
    assert call_with_deadline(threading.get_ident, None) == caller  # no limit: no thread


def test_an_error_of_the_work_reaches_the_caller():
    def work():
        raise ValueError("bad fact")

    with pytest.raises(ValueError, match="bad fact"):
        call_with_deadline(work, 5.0)


def test_work_past_its_deadline_is_stopped():
    def work():
        _swallowing_work(time.perf_counter() + 0.4)  # swallows what it is sent for 0.4 s
        while True:  # then runs on until stopped
            sum(range(200))

    t0 = time.perf_counter()
    with pytest.raises(DeadlineExceeded):
        call_with_deadline(work, 0.1)
    assert time.perf_counter() - t0 < 3.0


@pytest.mark.parametrize("overrun_s", [0.0, 0.002, 0.01, 0.03, 0.05, 0.07])
def test_nothing_lands_in_the_caller_after_the_work_ended(overrun_s):
    # the work ends right around the deadline (and past it, swallowing what it is sent) many times;
    # the caller then runs Python for a while: no DeadlineExceeded may reach it there
    for _ in range(5):
        start = time.perf_counter()
        try:
            call_with_deadline(lambda s=start: _swallowing_work(s + 0.02 + overrun_s), 0.02)
        except DeadlineExceeded:
            pass
        spin_until = time.perf_counter() + 0.12
        while time.perf_counter() < spin_until:
            sum(range(100))
