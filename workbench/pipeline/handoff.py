"""The pool step after a run's model calls, started by the thread that finishes the last of them.

A run's steps hop between threads: the pool step that submits model requests, the batcher thread
that runs them, the next pool step that maps their outputs. Awaiting the results on the event loop
and then handing the next step to the pool costs the loop a wake-up and a round of futures per
model call, and the run the latency of that extra hop. `after_models` hands the next step to the
pool from the batcher's completion callback instead; the loop awaits only the step's result.

Same outcomes as awaiting each request on the loop (`asyncio.gather(..., return_exceptions=True)`
of `InferenceRequest.wait`): a result, the request's exception, or `asyncio.CancelledError` for a
cancelled request. Used only for requests without a deadline (the waiter's deadline handling of
`InferenceRequest.wait` is not replicated). Cancelling the awaiting task cancels the requests
still queued and the step if it has not started (a step already running finishes; its result is
dropped), as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any

from .identity import ContextThreadPool


async def after_models(pool: concurrent.futures.Executor, requests: list[Any], step: Callable[[list[Any]], Any]) -> Any:
    """`step(outcomes)` on `pool` once every request of `requests` (`InferenceRequest`s, no
    deadline) is done, submitted by the thread that completes the last one; returns its result.

    A `ContextThreadPool` runs the step in the caller's `contextvars` context (as `run_in_executor`
    from the caller does with that pool); any other pool in its own thread's context (as before)."""
    if isinstance(pool, ContextThreadPool):
        step = _in_context(contextvars.copy_context(), step)
    out: concurrent.futures.Future = concurrent.futures.Future()
    lock = threading.Lock()
    state = {"left": len(requests), "cancelled": False, "submitted": None}

    def copy_result(f: concurrent.futures.Future) -> None:
        try:
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                out.set_exception(f.exception())
            else:
                out.set_result(f.result())
        except concurrent.futures.InvalidStateError:  # the caller cancelled `out` meanwhile
            pass

    def on_done(_: concurrent.futures.Future) -> None:
        with lock:
            state["left"] -= 1
            if state["left"] or state["cancelled"]:
                return
            outcomes = [_outcome(r.future) for r in requests]
            try:
                submitted = pool.submit(step, outcomes)
            except RuntimeError as exc:  # the pool is shut down
                try:
                    out.set_exception(exc)
                except concurrent.futures.InvalidStateError:
                    pass
                return
            state["submitted"] = submitted
        submitted.add_done_callback(copy_result)

    for r in requests:
        r.future.add_done_callback(on_done)
    try:
        return await asyncio.wrap_future(out)
    except asyncio.CancelledError:
        with lock:
            state["cancelled"] = True
            submitted = state["submitted"]
        for r in requests:
            r.cancel()
        if submitted is not None:
            submitted.cancel()  # never starts if it has not yet
        raise


def _outcome(f: concurrent.futures.Future) -> Any:
    if f.cancelled():
        return asyncio.CancelledError()
    exc = f.exception()
    return exc if exc is not None else f.result()


def _in_context(ctx: contextvars.Context, fn: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def run(outcomes: list[Any]) -> Any:
        return ctx.run(fn, outcomes)

    return run
