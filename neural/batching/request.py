"""One admitted request: its item, deadline, future and, once run, which batch served it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import RequestTimeoutError

if TYPE_CHECKING:
    from .batcher import DynamicBatcher

QUEUED, RUNNING, DONE, CANCELLED, TIMED_OUT = "queued", "running", "done", "cancelled", "timed_out"


@dataclass(slots=True, eq=False)
class InferenceRequest:
    """Handle of an admitted request. `await request` or `request.result(timeout)` gives its output.

    After completion: `batch_id`, `batch_size`, `queue_time_s` and `compute_time_s` describe the
    model call that served it (for provenance records).
    """

    seq: int
    item: Any
    length: int
    bucket: int
    enqueued_at: float
    deadline: float | None
    batcher: DynamicBatcher
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    state: str = QUEUED
    batch_id: int | None = None
    batch_size: int | None = None
    queue_time_s: float | None = None
    compute_time_s: float | None = None

    def cancel(self) -> bool:
        """Cancel the request. True if it was still queued (it will never run); False once running or done."""
        return self.batcher._cancel(self)

    def dispatch(self, here: bool = False) -> bool:
        """Release a request submitted with `hold=True`: wake the batcher's worker for it, or with
        `here=True` run it on this thread as a batch of one when the worker is idle and nothing else
        is queued (no thread hop to the worker and back; `DynamicBatcher._dispatch`). Returns True
        when it ran here (the future is done). Harmless on a request that was not held."""
        return self.batcher._dispatch(self, here)

    def done(self) -> bool:
        return self.future.done()

    def result(self, timeout: float | None = None) -> Any:
        """Block until the output is ready (for callers without an event loop).

        Waits at most `timeout` seconds and never past the request's deadline. Raises the model's
        `BatchExecutionError`, `RequestTimeoutError`, or `concurrent.futures.CancelledError`.
        """
        wait = _min_wait(timeout, self.deadline)
        try:
            return self.future.result(wait)
        except concurrent.futures.TimeoutError:
            if self.future.done():  # finished in the instant between timeout and here
                return self.future.result(0)
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise self.batcher._time_out(self, "waiting for the result") from None
            raise

    async def wait(self) -> Any:
        """Await the output; cancelling the awaiting task cancels the request (if still queued)."""
        fut = asyncio.wrap_future(self.future)
        # if this waiter gives up (timeout, cancellation) the result may still arrive: mark it retrieved
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        wait = _min_wait(None, self.deadline)
        try:
            # shield: a timeout or cancellation here must not cancel a request that is already running
            return await asyncio.wait_for(asyncio.shield(fut), wait)
        except RequestTimeoutError:
            raise
        except TimeoutError:
            if self.future.done() and not self.future.cancelled() and self.future.exception() is None:
                return self.future.result()
            raise self.batcher._time_out(self, "waiting for the result") from None
        except asyncio.CancelledError:
            self.cancel()
            raise

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wait().__await__()


def _min_wait(timeout: float | None, deadline: float | None) -> float | None:
    left = bounded_wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if timeout is None:
        return left
    return timeout if left is None else min(timeout, left)


def bounded_wait(wait_s: float | None) -> float | None:
    """`wait_s` no longer than the longest wait a lock takes (`threading.TIMEOUT_MAX`, ~292 years): a request's
    deadline may be any distance ahead (Triton's `timeout` parameter is a uint64 of microseconds), and a longer
    wait raised OverflowError (in the batcher's worker, which then died: the n16 finding)."""
    return None if wait_s is None else min(wait_s, threading.TIMEOUT_MAX)
