"""Who a run is and where it ran, chosen by the caller: the id a Ray Serve ingress picks for a request
(so that a retry on another replica records the same run, once) and the node/replica that served it.

`RUN_IDENTITY` is a context variable set around `Workbench.run`; the run recorder reads it when the run
is handed over (`RunRecorder.submit`). The executor's CPU steps run on the workbench's worker pool, so
that pool is a `ContextThreadPool`: each task runs in a copy of the submitting task's context.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class RunIdentity:
    """`run_id`: the id the next recorded run takes (used once; later runs in the same context get new
    ids); `served_by`: recorded with every run in the context (e.g. `node 3f9c2a01d4e5 replica pipelines#a1b2`)."""

    run_id: str | None = None
    served_by: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take_id(self) -> str | None:
        """The chosen run id the first time, None afterwards."""
        with self._lock:
            rid, self.run_id = self.run_id, None
            return rid


RUN_IDENTITY: contextvars.ContextVar[RunIdentity | None] = contextvars.ContextVar(
    "workbench_run_identity", default=None
)


class ContextThreadPool(concurrent.futures.ThreadPoolExecutor):
    """A thread pool whose tasks run in a copy of the caller's `contextvars` context (what
    `asyncio.to_thread` does; `loop.run_in_executor` does not), so `RUN_IDENTITY` reaches the pool."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        ctx = contextvars.copy_context()
        return super().submit(ctx.run, fn, *args, **kwargs)
