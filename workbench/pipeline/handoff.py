"""A run's steps carried by threads, the event loop woken once: `run_steps`.

A run is a few pool steps with model calls between them (steps.py). Awaiting every step and every
model call on the event loop costs a loop wake-up (a self-pipe write, a pass of the loop, futures
resolved on both sides) and a thread hop per stage; at concurrency 1 those hops were a third of a
`demo_digits` predict's latency (docs/serving.md, "Fourth round"). `run_steps` lets the threads
hand the run on instead:

- the pool thread that ends a step releases the step's model requests (submitted with
  `hold=True`); when a model's batcher is idle and the run's request is the only one queued, it runs
  that batch of one itself (`InferenceRequest.dispatch(here=True)`) and goes straight on with the
  next step; otherwise the batcher thread that finishes the last of the requests submits the next
  step to the pool;
- a durable run's commit is written by the finishing pool thread when the recorder is idle
  (`RunRecorder.submit(..., here=True)`), else by the recorder;
- the loop is woken once, when the run is committed (or fails), or when the run's next calls need
  the loop (a model call with a deadline, a generation): those are returned to the caller.

Under overload (the admission queue refused a request within the last `GATE_ENGAGED_S`), at most
`STEP_SLOTS` steps run Python at once in the process (`StepGate`): a pool thread waits for a slot
before its step (blocked on a lock, not competing for the GIL). Every runnable thread
competes with the event loop for the GIL, and the loop gives it up at every system call; with the
pool's 8 threads all runnable under a 3x overload, the loop's lag was p99 ~1-2 s, about half that
with the gate or 2 threads (docs/serving.md, "Sixth round"): requests sat unread in the kernel
and their answers unwritten, where admission control cannot see them. Engaged always, the
gate cost ~10% more CPU per request at concurrency 64 and refused a few requests there (runs
started late), so it limits steps only while the server refuses work anyway. A step that waits
longer than `STEP_PATIENCE_S` runs without a slot, so a step that holds one for long (a rules
evaluation running to its time limit) never stalls the others.

Same outcomes as awaiting each request on the loop (`asyncio.gather(..., return_exceptions=True)`
of `InferenceRequest.wait`): a result, the request's exception, or `asyncio.CancelledError` for a
cancelled request. Cancelling the awaiting task cancels the requests still queued and the step if
it has not started; a step already running finishes, its result is dropped, and the model requests
it submitted are cancelled before they reach the batcher's worker.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .identity import ContextThreadPool

Advance = Callable[[list[Any] | None], list[Any]]

STEP_SLOTS = 2  # steps running Python at once; the GIL lets ~1.2 cores work (docs/serving.md, threads or processes)
STEP_PATIENCE_S = 0.2  # a step waits at most this long for a slot, then runs without one


class StepGate:
    """While engaged, at most `slots` holders at once: `enter()` waits up to `patience_s` and then
    proceeds without a slot (it returns False then, and `leave(False)` gives nothing back). Not
    engaged, `enter()` returns False at once. `engage(s)` engages it for the next `s` seconds (the
    admission queue does so at every refusal: the server is overloaded). Thread-safe; the waiting is
    a lock wait in C (a `queue.SimpleQueue` of tokens), which does not hold the GIL."""

    __slots__ = ("_tokens", "patience_s", "slots", "engaged_until")

    def __init__(self, slots: int = STEP_SLOTS, patience_s: float = STEP_PATIENCE_S) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.slots, self.patience_s = slots, patience_s
        self.engaged_until = 0.0  # time.monotonic() until which the gate limits steps
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(slots):
            self._tokens.put(None)

    def engage(self, seconds: float) -> None:
        """Limit steps for the next `seconds` seconds (from now; a later call extends it)."""
        self.engaged_until = max(self.engaged_until, time.monotonic() + seconds)

    def enter(self) -> bool:
        """Take a slot (True), or go on without one (False): the gate is not engaged, or no slot
        came free within `patience_s` seconds."""
        if time.monotonic() >= self.engaged_until:
            return False
        try:
            self._tokens.get(True, self.patience_s)
        except queue.Empty:
            return False
        return True

    def leave(self, held: bool) -> None:
        if held:
            self._tokens.put(None)


STEP_GATE = StepGate()  # one per process: the GIL is one per process
GATE_ENGAGED_S = 1.0  # after a refusal, how long the gate stays engaged

# When set (a `time.monotonic()` instant), a run whose first step has not started by then is not
# started: `run_steps` raises StartDeadlineError (Triton's queue policy, `timeout_action: REJECT`).
# Set by the serving layer for admitted predictions (`serving.pipeline_max_wait_s` after admission).
START_BY: contextvars.ContextVar[float | None] = contextvars.ContextVar("workbench_start_by", default=None)


class StartDeadlineError(Exception):
    """A run waited for a worker past its `START_BY` instant and was not started (nothing ran).
    `late_s`: seconds past the deadline at which a worker picked the first step up."""

    def __init__(self, late_s: float) -> None:
        super().__init__(f"the run's first step was picked up {late_s:.3f} s after its start deadline")
        self.late_s = late_s


class _TwoLevelQueue:
    """The work queue of `RunPool`: items put by `RunPool.submit_first` are taken before the others,
    each level first in, first out. Has what `ThreadPoolExecutor` uses of `queue.SimpleQueue`.

    Items live in two deques; a `queue.SimpleQueue` holds one token per item, put after the item, so
    a getter holding a token always finds an item (the wait is in C, without the GIL)."""

    def __init__(self) -> None:
        self._first: collections.deque[Any] = collections.deque()
        self._rest: collections.deque[Any] = collections.deque()
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        self.local = threading.local()  # `first`: the calling thread's next put goes first

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        (self._first if getattr(self.local, "first", False) else self._rest).append(item)
        self._tokens.put(None)

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self._tokens.get(block, timeout)  # raises queue.Empty
        while True:  # an item is there; another getter may move between the two deques first
            try:
                return self._first.popleft()
            except IndexError:
                pass
            try:
                return self._rest.popleft()
            except IndexError:
                time.sleep(0)

    def get_nowait(self) -> Any:
        return self.get(False)


class RunPool(ContextThreadPool):
    """The run pool: a `ContextThreadPool` whose `submit_first` tasks go before those already
    queued by `submit`. `run_steps` submits a run's later steps (after its model calls) with
    `submit_first`, so a run that has started finishes before new runs start: the time a run
    takes once started does not grow with the queue of admitted runs behind it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._work_queue = _TwoLevelQueue()

    def submit_first(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """`submit`, ahead of every task queued by `submit`."""
        local = self._work_queue.local
        local.first = True
        try:
            return self.submit(fn, *args, **kwargs)
        finally:
            local.first = False


async def run_steps(
    pool: concurrent.futures.Executor,
    advance: Advance,
    outcomes: list[Any] | None,
    requests_of: Callable[[list[Any]], list[Any] | None],
    commit_of: Callable[[], concurrent.futures.Future | None],
) -> tuple[list[Any], Any]:
    """Run `advance(outcomes)` on `pool`, then every following step on threads, until the run ends
    or its calls need the event loop.

    Args:
        advance: one step: takes the previous calls' outcomes (None first), returns the next calls
            (empty when the run is finished).
        requests_of: for a step's calls, the requests to wait for on threads (`InferenceRequest`s
            submitted with `hold=True`, no deadline), or None when the loop must await the calls
            (`requests_of` has then released any held requests itself).
        commit_of: once the run is finished, the future of its durable commit (None: nothing to wait for).

    Returns:
        `(calls, None)`: calls for the loop to await, then call again with their outcomes; or
        `([], value)` when the run is finished, `value` the commit future's result (None without one).

    Raises what a step raises, the commit's error, or CancelledError (see the module docstring).

    A `ContextThreadPool` runs the steps in the caller's `contextvars` context (as `run_in_executor`
    from the caller does with that pool); any other pool in its own thread's context.
    """
    if isinstance(pool, ContextThreadPool):
        advance = _in_context(contextvars.copy_context(), advance)
    chain = _Chain(pool, advance, requests_of, commit_of)
    chain.start_by = START_BY.get() if outcomes is None else None
    chain.started = outcomes is not None  # a later step of the run: it goes first
    chain.submit(outcomes)
    try:
        result = await asyncio.wrap_future(chain.out)
    except asyncio.CancelledError:
        chain.cancel()  # a step may still be running: it keeps what it uses
        raise
    except BaseException:
        chain.release()
        raise
    chain.release()
    return result


class _Chain:
    __slots__ = (
        "pool",
        "advance",
        "requests_of",
        "commit_of",
        "out",
        "lock",
        "cancelled",
        "step",
        "requests",
        "left",
        "start_by",
        "started",
    )

    def __init__(self, pool: Any, advance: Advance, requests_of: Any, commit_of: Any) -> None:
        self.pool, self.advance, self.requests_of, self.commit_of = pool, advance, requests_of, commit_of
        self.out: concurrent.futures.Future = concurrent.futures.Future()
        self.lock = threading.Lock()
        self.cancelled = False
        self.step: concurrent.futures.Future | None = None  # the pool step submitted last
        self.requests: list[Any] = []  # the requests waited for
        self.left = 0
        self.start_by: float | None = None  # START_BY of the run's first step
        self.started = False  # a step has been submitted (later ones go first on a RunPool)

    def submit(self, outcomes: list[Any] | None) -> None:
        """Queue the next step on the pool (any thread)."""
        with self.lock:
            if self.cancelled:
                return
            try:
                if self.started and isinstance(self.pool, RunPool):
                    step = self.step = self.pool.submit_first(self.run, outcomes)
                else:
                    step = self.step = self.pool.submit(self.run, outcomes)
                self.started = True
            except RuntimeError as exc:  # the pool is shut down
                _settle(self.out, exc=exc)
                return
        step.add_done_callback(self._step_done)

    def _step_done(self, f: concurrent.futures.Future) -> None:
        """A step the pool dropped (`shutdown(cancel_futures=True)`) cancels the wait, as awaiting it on
        the loop did; one that raised outside `advance` fails it (the caller never waits for ever)."""
        if f.cancelled():
            self.out.cancel()
        elif f.exception() is not None:
            _settle(self.out, exc=f.exception())

    def cancel(self) -> None:
        """The caller left (loop thread): nothing more starts; queued requests and the step are dropped."""
        with self.lock:
            self.cancelled = True
            step, requests = self.step, self.requests
        for r in requests:
            r.cancel()
        if step is not None:
            step.cancel()  # never starts if it has not yet

    def release(self) -> None:
        """The chain's outcome is settled and no thread uses it any more (loop thread): drop what ties it
        to its futures. Each future keeps its done callbacks (bound methods of this chain, `copy`) after
        they ran, so chain -> future -> callback -> chain is a reference cycle, and through it the run's
        step, requests and result: ~130 objects a predict that only the cyclic collector freed. Its
        full collections then stopped a replica for 50-160 ms every ~1.5 s under load (the p99 of
        `bench api --ray local`; docs/scaling.md). Released, they are freed by reference counting."""
        self.advance = self.requests_of = self.commit_of = None  # type: ignore[assignment]
        self.step = None
        self.requests = []

    def run(self, outcomes: list[Any] | None) -> None:
        """Steps on this pool thread for as long as nothing has to be waited for (holding a
        `STEP_GATE` slot while they run)."""
        held = STEP_GATE.enter()
        try:
            self._run(outcomes)
        finally:
            STEP_GATE.leave(held)

    def _run(self, outcomes: list[Any] | None) -> None:
        if self.start_by is not None:
            late = time.monotonic() - self.start_by
            self.start_by = None
            if late > 0:
                _settle(self.out, exc=StartDeadlineError(late))
                return
        while True:
            try:
                calls = self.advance(outcomes)
            except BaseException as exc:
                _settle(self.out, exc=exc)
                return
            if not calls:
                self._finished()
                return
            requests = self.requests_of(calls)
            if requests is None:  # the loop awaits these
                _settle(self.out, (calls, None))
                return
            with self.lock:
                cancelled = self.cancelled
                self.requests, self.left = requests, len(requests)
            if cancelled:  # the caller left while the step ran: its requests never reach the model
                for r in requests:
                    r.cancel()
                return
            if len(requests) == 1 and requests[0].dispatch(here=True):
                with self.lock:
                    if self.cancelled:  # the caller left during the batch: no later step (nor commit) starts
                        return
                outcomes = [_outcome(requests[0].future)]
                continue
            for r in requests:
                r.dispatch()
            for r in requests:
                r.future.add_done_callback(self._request_done)
            return

    def _request_done(self, _: concurrent.futures.Future) -> None:
        with self.lock:
            self.left -= 1
            if self.left or self.cancelled:
                return
        self.submit([_outcome(r.future) for r in self.requests])

    def _finished(self) -> None:
        commit = self.commit_of()
        if commit is None:
            _settle(self.out, ([], None))
            return

        def copy(f: concurrent.futures.Future) -> None:
            exc = f.exception() if not f.cancelled() else concurrent.futures.CancelledError()
            if exc is not None:
                _settle(self.out, exc=exc)
            else:
                _settle(self.out, ([], f.result()))

        commit.add_done_callback(copy)


def _settle(fut: concurrent.futures.Future, value: Any = None, exc: BaseException | None = None) -> None:
    try:
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)
    except concurrent.futures.InvalidStateError:  # the caller cancelled `fut` meanwhile
        pass


def _outcome(f: concurrent.futures.Future) -> Any:
    if f.cancelled():
        return asyncio.CancelledError()
    exc = f.exception()
    return exc if exc is not None else f.result()


def _in_context(ctx: contextvars.Context, fn: Advance) -> Advance:
    def run(outcomes: list[Any] | None) -> Any:
        return ctx.run(fn, outcomes)

    return run
