"""`run_steps`: a run's steps carried by threads. The step after model calls starts from the thread
that finishes the last call (or runs on in the same thread when a request ran there), with the
outcomes `asyncio.gather(..., return_exceptions=True)` gave; the caller is woken when the run is
committed or its calls need the loop; nothing starts once the caller left."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time

import pytest

from workbench.pipeline.handoff import run_steps
from workbench.pipeline.identity import ContextThreadPool


class Request:
    """Stands for a held `InferenceRequest`: a concurrent future, `cancel` while queued, `dispatch`."""

    def __init__(self, run_here: object = None) -> None:
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self.cancelled_by_caller = False
        self.dispatched: list[bool] = []
        self.run_here = run_here  # a value: `dispatch(here=True)` "runs" it on the caller's thread

    def cancel(self) -> bool:
        self.cancelled_by_caller = True
        return self.future.cancel()

    def dispatch(self, here: bool = False) -> bool:
        self.dispatched.append(here)
        if here and self.run_here is not None and self.future.set_running_or_notify_cancel():
            self.future.set_result(self.run_here)
            return True
        return False


async def _until(condition, timeout_s: float = 60.0) -> None:
    """Wait on the loop until `condition()` is true; fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


def _finish_later(fn, delay: float = 0.05) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), fn()))
    t.start()
    return t


class Steps:
    """`advance`: first step returns `first` calls (requests), the next records its outcomes and ends."""

    def __init__(self, *requests: Request, commit: concurrent.futures.Future | None = None) -> None:
        self.requests = list(requests)
        self.seen: list[tuple[object, str]] = []
        self.commit = commit

    def advance(self, outcomes):
        self.seen.append((outcomes, threading.current_thread().name))
        return self.requests if outcomes is None and self.requests else []

    def requests_of(self, calls):
        return calls

    def commit_of(self):
        return self.commit


def test_outcomes_and_the_thread_that_starts_the_next_step():
    pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="steps")
    a, b, c = Request(), Request(), Request()
    boom = ValueError("model failed")
    s = Steps(a, b, c)

    async def main():
        workers = [
            _finish_later(lambda: a.future.set_result([1, 2])),
            _finish_later(lambda: b.future.set_exception(boom), 0.02),
            _finish_later(lambda: c.future.cancel(), 0.01),
        ]
        out = await run_steps(pool, s.advance, None, s.requests_of, s.commit_of)
        for w in workers:
            w.join()
        return out

    assert asyncio.run(main()) == ([], None)
    outcomes = s.seen[1][0]
    assert outcomes[0] == [1, 2] and outcomes[1] is boom and isinstance(outcomes[2], asyncio.CancelledError)
    assert all(name.startswith("steps") for _, name in s.seen)
    assert a.dispatched == b.dispatched == c.dispatched == [False]  # several requests: to their workers
    pool.shutdown()


def test_a_request_run_on_the_step_thread_continues_there():
    pool = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="steps")
    r = Request(run_here="out")
    s = Steps(r)
    assert asyncio.run(run_steps(pool, s.advance, None, s.requests_of, s.commit_of)) == ([], None)
    assert r.dispatched == [True]
    assert s.seen[1][0] == ["out"] and s.seen[0][1] == s.seen[1][1]  # no hop between the steps
    pool.shutdown()


def test_the_commit_is_waited_for_and_its_error_raised():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    commit: concurrent.futures.Future = concurrent.futures.Future()
    s = Steps(commit=commit)

    async def main():
        _finish_later(lambda: commit.set_result("run-id"))
        return await run_steps(pool, s.advance, None, s.requests_of, s.commit_of)

    assert asyncio.run(main()) == ([], "run-id")
    failed: concurrent.futures.Future = concurrent.futures.Future()
    failed.set_exception(OSError("disk full"))
    s = Steps(commit=failed)
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(run_steps(pool, s.advance, None, s.requests_of, s.commit_of))
    pool.shutdown()


def test_calls_the_loop_must_await_are_returned():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    s = Steps(r)
    calls, committed = asyncio.run(run_steps(pool, s.advance, None, lambda calls: None, s.commit_of))
    assert calls == [r] and committed is None and len(s.seen) == 1
    assert asyncio.run(run_steps(pool, s.advance, ["x"], s.requests_of, s.commit_of)) == ([], None)
    assert s.seen[1][0] == ["x"]
    pool.shutdown()


def test_a_caller_that_leaves_cancels_queued_requests_and_the_step_never_runs():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    s = Steps(r)

    async def main():
        task = asyncio.ensure_future(run_steps(pool, s.advance, None, s.requests_of, s.commit_of))
        await _until(lambda: s.seen)  # the first step ran and returned the request
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert r.cancelled_by_caller and r.future.cancelled()
    pool.shutdown(wait=True)  # a step queued after the cancel would have run by now
    assert len(s.seen) == 1
    pool.shutdown()


def test_a_result_arriving_after_the_caller_left_starts_nothing():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    r.future.set_running_or_notify_cancel()  # running: the caller's cancel cannot remove it
    s = Steps(r)

    async def main():
        task = asyncio.ensure_future(run_steps(pool, s.advance, None, s.requests_of, s.commit_of))
        await _until(lambda: s.seen)  # the first step ran and returned the request
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    r.future.set_result(1)  # the batch finishes later
    pool.shutdown(wait=True)  # a step it started would have run by now
    assert len(s.seen) == 1


def test_requests_of_a_step_running_when_the_caller_left_never_reach_the_model():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request(run_here="out")
    started, release = threading.Event(), threading.Event()

    def advance(outcomes):
        started.set()
        release.wait(5)  # the caller leaves while this step runs
        return [r]

    async def main():
        task = asyncio.ensure_future(run_steps(pool, advance, None, lambda c: c, lambda: None))
        while not started.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    asyncio.run(main())
    pool.shutdown(wait=True)  # the step the caller left ends (it returns the request)
    assert r.cancelled_by_caller and r.future.cancelled() and r.dispatched == []


def test_step_errors_reach_the_caller():
    pool = concurrent.futures.ThreadPoolExecutor(1)
    r = Request()
    r.future.set_result(1)

    def advance(outcomes):
        if outcomes is None:
            return [r]
        raise KeyError("in the step")

    with pytest.raises(KeyError, match="in the step"):
        asyncio.run(run_steps(pool, advance, None, lambda c: c, lambda: None))
    pool.shutdown()


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


def test_a_context_pool_runs_the_steps_in_the_callers_context():
    seen: list[str] = []

    def advance(outcomes):
        seen.append(VAR.get())
        return [r] if outcomes is None else []

    async def main(pool):
        VAR.set("caller's")
        _finish_later(lambda: r.future.set_result(1))
        return await run_steps(pool, advance, None, lambda c: c, lambda: None)

    r = Request()
    with ContextThreadPool(1) as pool:
        asyncio.run(main(pool))
    assert seen == ["caller's", "caller's"]
    seen.clear()
    r = Request()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # as run_in_executor: the thread's own context
        asyncio.run(main(pool))
    assert seen == ["unset", "unset"]


async def test_a_step_the_pool_drops_at_shutdown_ends_the_wait():
    # `shutdown(cancel_futures=True)` (Workbench.close) drops queued steps: the caller gets
    # CancelledError (as awaiting the step on the loop gave) instead of waiting for ever
    pool = concurrent.futures.ThreadPoolExecutor(1)
    busy = threading.Event()
    pool.submit(busy.wait, 10)  # the one worker is taken: the run's step stays queued
    req = Request()
    steps = Steps(req)
    waiting = asyncio.ensure_future(run_steps(pool, steps.advance, None, steps.requests_of, steps.commit_of))
    await asyncio.sleep(0)  # one loop step: run_steps submits the first step before it first awaits
    closer = threading.Thread(target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True})
    closer.start()
    with pytest.raises(asyncio.CancelledError):  # while the worker is still busy: the drop alone wakes the caller
        await asyncio.wait_for(waiting, 60)
    busy.set()
    closer.join(60)
    assert steps.seen == []


def test_a_run_pool_takes_later_steps_of_started_runs_before_new_runs():
    from workbench.pipeline.handoff import RunPool

    pool = RunPool(1, thread_name_prefix="order")
    release = threading.Event()
    order: list[str] = []
    pool.submit(release.wait, 10)  # the only thread is busy
    a_step1_done = threading.Event()
    a_request = Request()

    def a(outcomes):
        order.append("a1" if outcomes is None else "a2")
        if outcomes is None:
            a_step1_done.set()
            return [a_request]
        return []

    def b(outcomes):
        order.append("b1")
        return []

    async def main():
        ta = asyncio.ensure_future(run_steps(pool, a, None, lambda c: c, lambda: None))
        release.set()
        await asyncio.sleep(0)
        await asyncio.get_running_loop().run_in_executor(None, a_step1_done.wait, 10)
        blocker = threading.Event()
        pool.submit(blocker.wait, 10)  # busy again while b's first step and a's second are queued
        tb = asyncio.ensure_future(run_steps(pool, b, None, lambda c: c, lambda: None))
        await asyncio.sleep(0)  # one loop step: run_steps queues b's first step before it first awaits
        a_request.future.set_result(1)  # a's next step is queued (by this call) after b's first
        blocker.set()
        await asyncio.gather(ta, tb)

    asyncio.run(main())
    pool.shutdown()
    assert order == ["a1", "a2", "b1"]  # a started first, so it finishes first


def test_step_gate_lets_two_steps_run_at_once_and_a_long_holder_stalls_no_one():
    from workbench.pipeline.handoff import StepGate

    gate = StepGate(2, patience_s=0.2)
    assert [gate.enter() for _ in range(4)] == [False] * 4  # not engaged: no slots taken, no waiting
    gate.engage(30.0)
    inside, most, held_all = [0], [0], []
    lock = threading.Lock()
    start = threading.Barrier(8, timeout=30)  # all eight ask at once
    gate.patience_s = 30.0  # here no step may give up waiting: on a loaded machine 0.2 s was not always enough

    def step() -> None:
        start.wait()
        held = gate.enter()
        held_all.append(held)
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with lock:
            inside[0] -= 1
        gate.leave(held)

    threads = [threading.Thread(target=step) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2 and held_all == [True] * 8
    gate.patience_s = 0.2
    assert gate.enter() and gate.enter()  # two long holders (rules at their time limit)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as third:  # a third step waits its patience, then runs without a slot
        assert third.submit(gate.enter).result(timeout=60) is False  # 60 s: only a step that never gave up fails
    assert time.monotonic() - t0 > 0.15
    gate.leave(False)
    gate.leave(True)
    assert gate.enter() is True


def test_an_admission_refusal_engages_the_step_gate():
    from workbench.pipeline.handoff import STEP_GATE
    from workbench.serving.admission import AdmissionQueue
    from workbench.serving.errors import OverloadedError

    STEP_GATE.engaged_until = 0.0
    q = AdmissionQueue(1)
    with q.admit("p"):
        assert time.monotonic() >= STEP_GATE.engaged_until
        with pytest.raises(OverloadedError):
            q.admit("p")
        assert STEP_GATE.engaged_until > time.monotonic()
    STEP_GATE.engaged_until = 0.0
