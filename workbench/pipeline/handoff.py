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

Same outcomes as awaiting each request on the loop (`asyncio.gather(..., return_exceptions=True)`
of `InferenceRequest.wait`): a result, the request's exception, or `asyncio.CancelledError` for a
cancelled request. Cancelling the awaiting task cancels the requests still queued and the step if
it has not started; a step already running finishes, its result is dropped, and the model requests
it submitted are cancelled before they reach the batcher's worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any

from .identity import ContextThreadPool

Advance = Callable[[list[Any] | None], list[Any]]


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
    __slots__ = ("pool", "advance", "requests_of", "commit_of", "out", "lock", "cancelled", "step", "requests", "left")

    def __init__(self, pool: Any, advance: Advance, requests_of: Any, commit_of: Any) -> None:
        self.pool, self.advance, self.requests_of, self.commit_of = pool, advance, requests_of, commit_of
        self.out: concurrent.futures.Future = concurrent.futures.Future()
        self.lock = threading.Lock()
        self.cancelled = False
        self.step: concurrent.futures.Future | None = None  # the pool step submitted last
        self.requests: list[Any] = []  # the requests waited for
        self.left = 0

    def submit(self, outcomes: list[Any] | None) -> None:
        """Queue the next step on the pool (any thread)."""
        with self.lock:
            if self.cancelled:
                return
            try:
                step = self.step = self.pool.submit(self.run, outcomes)
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
        """Steps on this pool thread for as long as nothing has to be waited for."""
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
