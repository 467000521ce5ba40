"""Admission control and deadlines for requests that queue for work (Triton's queue policy, vLLM's
scheduler limits): a bounded number of requests admitted per pipeline; excess is refused at once
with a Retry-After estimate; every admitted request has a deadline after which its work is
cancelled (queued steps never run, queued model requests are removed) and it is answered 504.

The limit counts requests admitted and not yet answered (running or waiting for a worker, a
model batch or a rules engine). With the service rate fixed by the machine, the limit bounds the
time an admitted request can wait: latency ~ admitted / throughput (Little's law), so a limit of
256 at 200 runs/s keeps the admitted p99 near 1.3 s however much more load is offered.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from prometheus_client import Gauge

from neural.metrics import METRICS_REGISTRY

from .errors import DeadlineError, OverloadedError

T = TypeVar("T")

QUEUE_SIZE = Gauge(
    "workbench_pipeline_requests_admitted",
    "Predict requests admitted and not answered yet (running or queued), by pipeline (Triton: queue size).",
    ["pipeline"],
    registry=METRICS_REGISTRY,
)
REJECTED = Gauge(
    "workbench_pipeline_admission_limit",
    "Most predict requests admitted at once per pipeline (settings.serving.pipeline_max_queue).",
    ["pipeline"],
    registry=METRICS_REGISTRY,
)


class AdmissionQueue:
    """At most `limit` requests admitted at once per key (a pipeline name). Thread-safe.

    `admit(key, n)` takes n slots or raises OverloadedError (nothing admitted) with a Retry-After
    from the recent service time (an exponentially weighted mean of admitted requests' durations).
    """

    def __init__(self, limit: int, what: str = "pipeline"):
        if limit < 1:
            raise ValueError(f"admission limit must be >= 1, got {limit}")
        self.limit = limit
        self.what = what
        self._lock = threading.Lock()
        self._admitted: dict[str, int] = {}
        self._mean_s: dict[str, float] = {}

    def admitted(self, key: str) -> int:
        """Requests holding slots of `key` now."""
        return self._admitted.get(key, 0)

    def admit(self, key: str, n: int = 1) -> _Ticket:
        """Take `n` slots of `key` (a batch larger than the limit takes the whole limit).

        Raises OverloadedError (HTTP 429) when they are not free; nothing is admitted then."""
        n = max(1, min(n, self.limit))
        with self._lock:
            used = self._admitted.get(key, 0)
            if used + n > self.limit:
                mean = self._mean_s.get(key, 0.05)
                retry = max(1, math.ceil(mean * (used + n - self.limit + 1) / max(1, n)))
                raise OverloadedError(
                    f"{self.what} {key!r}: {used} requests admitted, the limit is {self.limit}; retry later",
                    float(retry),
                )
            self._admitted[key] = used + n
        QUEUE_SIZE.labels(key).set(used + n)
        REJECTED.labels(key).set(self.limit)
        return _Ticket(self, key, n)

    def _release(self, key: str, n: int, seconds: float) -> None:
        with self._lock:
            left = self._admitted[key] = max(0, self._admitted.get(key, 0) - n)
            prev = self._mean_s.get(key)
            self._mean_s[key] = seconds if prev is None else 0.9 * prev + 0.1 * seconds
        QUEUE_SIZE.labels(key).set(left)


class _Ticket:
    __slots__ = ("_q", "_key", "_n", "_t0", "_done")

    def __init__(self, q: AdmissionQueue, key: str, n: int):
        self._q, self._key, self._n, self._t0, self._done = q, key, n, time.monotonic(), False

    def release(self) -> None:
        if not self._done:
            self._done = True
            self._q._release(self._key, self._n, time.monotonic() - self._t0)

    def __enter__(self) -> _Ticket:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


async def with_deadline(work: Awaitable[T], timeout_s: float, what: str) -> T:
    """Await `work` for at most `timeout_s` seconds; past it, cancel it (its queued steps and model
    requests are dropped) and raise DeadlineError (HTTP 504)."""
    try:
        return await asyncio.wait_for(work, timeout_s)
    except TimeoutError:
        raise DeadlineError(f"{what}: no answer within timeout_s={timeout_s:g} s; the work was cancelled") from None
