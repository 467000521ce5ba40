"""`after_models`: the pool step after model calls starts from the thread that finishes the last call,
with the outcomes `asyncio.gather(..., return_exceptions=True)` gave, and never once the caller left."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time

import pytest

from workbench.pipeline.handoff import after_models
from workbench.pipeline.identity import ContextThreadPool


class Request:
    """Stands for an `InferenceRequest`: a concurrent future, `cancel` while still queued."""

    def __init__(self) -> None:
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self.cancelled_by_caller = False

    def cancel(self) -> bool:
        self.cancelled_by_caller = True
        return self.future.cancel()


def _finish_later(fn, delay: float = 0.05) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), fn()))
    t.start()
    return t


def test_outcomes_and_the_thread_that_starts_the_step():
    pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="steps")
    a, b, c = Request(), Request(), Request()
    boom = ValueError("model failed")
    seen: dict = {}

    def step(outcomes):
        seen["thread"] = threading.current_thread().name
        return outcomes

    async def main():
        workers = [
            _finish_later(lambda: a.future.set_result([1, 2])),
            _finish_later(lambda: b.future.set_exception(boom), 0.02),
            _finish_later(lambda: c.future.cancel(), 0.01),
        ]
        out = await after_models(pool, [a, b, c], step)
        for w in workers:
            w.join()
        return out

    outcomes = asyncio.run(main())
    assert outcomes[0] == [1, 2] and outcomes[1] is boom and isinstance(outcomes[2], asyncio.CancelledError)
    assert seen["thread"].startswith("steps")
    pool.shutdown()


def test_done_requests_run_the_step_at_once():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    r.future.set_result("x")
    assert asyncio.run(after_models(pool, [r], lambda o: o)) == ["x"]
    pool.shutdown()


def test_a_caller_that_leaves_cancels_queued_requests_and_the_step_never_runs():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    ran = threading.Event()

    async def main():
        task = asyncio.ensure_future(after_models(pool, [r], lambda o: ran.set()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert r.cancelled_by_caller and r.future.cancelled()
    time.sleep(0.1)
    assert not ran.is_set()
    pool.shutdown()


def test_a_result_arriving_after_the_caller_left_starts_nothing():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    r.future.set_running_or_notify_cancel()  # running: the caller's cancel cannot remove it
    ran = threading.Event()

    async def main():
        task = asyncio.ensure_future(after_models(pool, [r], lambda o: ran.set()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    r.future.set_result(1)  # the batch finishes later
    time.sleep(0.1)
    assert not ran.is_set()
    pool.shutdown()


def test_step_errors_reach_the_caller():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    r.future.set_result(1)

    def step(outcomes):
        raise KeyError("in the step")

    with pytest.raises(KeyError, match="in the step"):
        asyncio.run(after_models(pool, [r], step))
    pool.shutdown()


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def test_a_context_pool_runs_the_step_in_the_callers_context():
    r = Request()

    async def main(pool):
        VAR.set("caller's")
        _finish_later(lambda: r.future.set_result(1))
        return await after_models(pool, [r], lambda o: VAR.get())

    with ContextThreadPool(1) as pool:
        assert asyncio.run(main(pool)) == "caller's"
    r = Request()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as run_in_executor: the thread's own context
        assert asyncio.run(main(pool)) == "unset"
