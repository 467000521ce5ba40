"""Admission control and deadlines for requests that queue for work (Triton's queue policy, vLLM's
scheduler limits): a bounded number of requests admitted per pipeline; excess is refused at once
with a Retry-After estimate; every admitted request has a deadline after which its work is
cancelled (queued steps never run, queued model requests are removed) and it is answered 504.

Two bounds, both per pipeline:

- a count: requests admitted and not yet answered (running or waiting for a worker, a model batch
  or a rules engine), `serving.pipeline_max_queue`;
- a wait: with the service rate fixed by the machine, a new request waits about admitted /
  throughput (Little's law). The queue measures its own throughput (answers per second over the
  last `RATE_WINDOW` answers) and refuses a request whose expected wait would pass
  `serving.pipeline_max_wait_s`, so the admitted latency stays bounded on a slow machine too,
  where a fixed count would let it grow to count / throughput (256 at 90 runs/s: 2.8 s). A run's
  own duration is not waiting: the bound is `max_wait_s` plus the service time, the shortest of the
  recent runs that were admitted while fewer than `MIN_ADMITTED` were in (they did not queue), so a
  pipeline whose runs take 5 s each while 8 run side by side is not refused for that. Runs admitted
  into a queue do not count: their durations include the wait, and under a sustained overload the
  shortest of them grew with the bound it set (admitted requests answered after 1.5-2.3 s at
  `max_wait_s` = 1; docs/serving.md, Overload). Before any such run, the shortest recent run of any
  kind stands in.
  The wait bound applies only once `MIN_ADMITTED` requests are in (a cold server is never refused).
"""

from __future__ import annotations

import asyncio
import collections
import math
import threading
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from prometheus_client import Gauge

from neural.metrics import METRICS_REGISTRY
from workbench.pipeline.handoff import GATE_ENGAGED_S, STEP_GATE
from workbench.pipeline.metrics import child, remove

from .errors import DeadlineError, OverloadedError

T = TypeVar("T")

QUEUE_SIZE = Gauge(
    "workbench_pipeline_requests_admitted",
    "Predict requests admitted and not answered yet (running or queued), by pipeline (Triton: queue size).",
    ["pipeline"],
    registry=METRICS_REGISTRY,
    multiprocess_mode="livesum",
)
REJECTED = Gauge(
    "workbench_pipeline_admission_limit",
    "Most predict requests admitted at once per pipeline (settings.serving.pipeline_max_queue).",
    ["pipeline"],
    registry=METRICS_REGISTRY,
    multiprocess_mode="livemax",
)


RATE_WINDOW = 128  # answers the throughput estimate is taken over
MIN_ADMITTED = 8  # the wait bound never refuses while fewer requests than this are admitted


class AdmissionQueue:
    """At most `limit` requests admitted at once per key (a pipeline name), and none whose expected
    wait passes `max_wait_s` (None: no wait bound). Thread-safe.

    `admit(key, n)` takes n slots or raises OverloadedError (nothing admitted) with a Retry-After
    in whole seconds: the expected time until enough slots free up (excess / throughput), at least 1.
    """

    def __init__(self, limit: int, what: str = "pipeline", max_wait_s: float | None = None):
        if limit < 1:
            raise ValueError(f"admission limit must be >= 1, got {limit}")
        if max_wait_s is not None and max_wait_s <= 0:
            raise ValueError(f"max_wait_s must be > 0, got {max_wait_s}")
        self.limit = limit
        self.max_wait_s = max_wait_s
        self.what = what
        self._lock = threading.Lock()
        self._admitted: dict[str, int] = {}
        self._mean_s: dict[str, float] = {}
        self._answers: dict[str, collections.deque[float]] = {}
        self._durations: dict[str, collections.deque[float]] = {}  # any run
        self._service: dict[str, collections.deque[float]] = {}  # runs admitted with < MIN_ADMITTED in
        self._busy: dict[str, list[float]] = {}  # key -> [busy seconds before, start of the current busy period]

    def _busy_clock(self, key: str, now: float) -> float:
        """Seconds `key` has had requests admitted (idle gaps do not count). Call with the lock held."""
        acc, since = self._busy.get(key, (0.0, -1.0))
        return acc + (now - since if since >= 0 else 0.0)

    def throughput(self, key: str) -> float | None:
        """Answers per busy second (time with requests admitted; idle gaps do not count) over the last
        `RATE_WINDOW` answers of `key` (None: too few yet)."""
        times = self._answers.get(key)
        if times is None or len(times) < 16:
            return None
        span = times[-1] - times[0]
        return (len(times) - 1) / span if span > 0 else None

    def service_s(self, key: str) -> float:
        """Seconds one run of `key` takes when it does not queue: the shortest of the last
        `RATE_WINDOW` runs admitted while fewer than `MIN_ADMITTED` were in (else the shortest recent
        run of any kind; 0.0 before any answer). Call with the lock held."""
        return min(self._service.get(key) or self._durations.get(key) or (0.0,))

    def retry_after_s(self, key: str) -> float:
        """Whole seconds until the requests admitted now for `key` are expected to be answered
        (admitted / throughput), at least 1: the Retry-After of a request refused after admission
        (this engages the step gate, as a refusal at admission does)."""
        STEP_GATE.engage(GATE_ENGAGED_S)
        with self._lock:
            rate = self.throughput(key)
            used = self._admitted.get(key, 0)
        return float(max(1, math.ceil(used / rate))) if rate else 1.0

    def admitted(self, key: str) -> int:
        """Requests holding slots of `key` now."""
        return self._admitted.get(key, 0)

    def refusal(self, key: str, n: int = 1) -> OverloadedError | None:
        """The error `admit(key, n)` would raise now, or None; takes nothing (a cheap early check:
        the front door answers 429 before the request's body is read or parsed)."""
        with self._lock:
            try:
                self._check(key, max(1, min(n, self.limit)), self._admitted.get(key, 0))
            except OverloadedError as exc:
                return exc
        return None

    def _check(self, key: str, n: int, used: int) -> None:
        """Raise OverloadedError when `n` more slots of `key` (with `used` taken) pass a bound; a
        refusal engages the run pool's step gate (`workbench.pipeline.handoff.StepGate`): the server
        is overloaded, and the event loop that refuses the excess needs the GIL more than more pool
        threads do."""
        try:
            self._bounds(key, n, used)
        except OverloadedError:
            STEP_GATE.engage(GATE_ENGAGED_S)
            raise

    def _bounds(self, key: str, n: int, used: int) -> None:
        rate = self.throughput(key)
        if used + n > self.limit:
            mean = self._mean_s.get(key, 0.05)
            wait = (used + n - self.limit) / rate if rate else mean * (used + n - self.limit + 1) / max(1, n)
            raise OverloadedError(
                f"{self.what} {key!r}: {used} requests admitted, the limit is {self.limit}; retry later",
                float(max(1, math.ceil(wait))),
            )
        if self.max_wait_s is None or not rate or used < MIN_ADMITTED:
            return  # the wait bound does not apply (the service time, a min over the window, is not needed)
        bound = self.max_wait_s + self.service_s(key)
        if (used + n) / rate > bound:
            excess = (used + n) / rate - bound
            raise OverloadedError(
                f"{self.what} {key!r}: {used} requests admitted would wait about {(used + n) / rate:.1f} s at "
                f"{rate:.0f} answers/s, more than serving.pipeline_max_wait_s={self.max_wait_s:g}; retry later",
                float(max(1, math.ceil(excess))),
            )

    def admit(self, key: str, n: int = 1) -> _Ticket:
        """Take `n` slots of `key` (a batch larger than the limit takes the whole limit).

        Raises OverloadedError (HTTP 429) when they are not free; nothing is admitted then."""
        n = max(1, min(n, self.limit))
        with self._lock:
            used = self._admitted.get(key, 0)
            self._check(key, n, used)
            self._admitted[key] = used + n
            if used == 0:  # a busy period starts
                now = time.monotonic()
                self._busy[key] = [self._busy_clock(key, now), now]
        child(QUEUE_SIZE, key).set(used + n)
        child(REJECTED, key).set(self.limit)
        return _Ticket(self, key, n, used < MIN_ADMITTED)

    def _release(self, key: str, n: int, seconds: float, unqueued: bool, counted: bool = True) -> None:
        with self._lock:
            left = self._admitted[key] = max(0, self._admitted.get(key, 0) - n)
            now = time.monotonic()
            busy_now = self._busy_clock(key, now)
            if left == 0:  # the busy period ends
                self._busy[key] = [busy_now, -1.0]
            if not counted:  # refused without a run (bad input): not an answer of the service
                child(QUEUE_SIZE, key).set(left)
                return
            prev = self._mean_s.get(key)
            self._mean_s[key] = seconds if prev is None else 0.9 * prev + 0.1 * seconds
            times = self._answers.get(key)
            if times is None:
                times = self._answers[key] = collections.deque(maxlen=RATE_WINDOW)
            times.append(busy_now)
            durations = self._durations.get(key)
            if durations is None:
                durations = self._durations[key] = collections.deque(maxlen=RATE_WINDOW)
            durations.append(seconds)
            if unqueued:
                service = self._service.get(key)
                if service is None:
                    service = self._service[key] = collections.deque(maxlen=RATE_WINDOW)
                service.append(seconds)
        child(QUEUE_SIZE, key).set(left)

    def discard(self, ticket: _Ticket) -> None:
        """Give back `ticket`'s slots without counting its run (its pipeline does not exist). A key
        with nothing admitted and no answered run is forgotten, its Prometheus series removed, so
        requests for made-up names leave no state behind (the label sets stay bounded)."""
        if ticket._done:
            return
        ticket._done = True
        key = ticket._key
        with self._lock:
            left = self._admitted[key] = max(0, self._admitted.get(key, 0) - ticket._n)
            if left == 0 and key not in self._answers:
                for per_key in (self._admitted, self._mean_s, self._durations, self._service, self._busy):
                    per_key.pop(key, None)
                for gauge in (QUEUE_SIZE, REJECTED):  # under the lock: an admit of `key` sets them after it
                    remove(gauge, key)
                return
            if left == 0:  # the busy period ends
                self._busy[key] = [self._busy_clock(key, time.monotonic()), -1.0]
        child(QUEUE_SIZE, key).set(left)


class _Ticket:
    __slots__ = ("_q", "_key", "_n", "_t0", "_done", "_unqueued")

    def __init__(self, q: AdmissionQueue, key: str, n: int, unqueued: bool):
        self._q, self._key, self._n, self._t0, self._done = q, key, n, time.monotonic(), False
        self._unqueued = unqueued  # admitted while fewer than MIN_ADMITTED were in: its duration is a service time

    @property
    def admitted_at(self) -> float:
        """`time.monotonic()` when the slots were taken."""
        return self._t0

    def release(self, counted: bool = True) -> None:
        """Give the slots back. `counted=False`: the request was refused without a run (its input
        did not validate), so its few milliseconds are kept out of the throughput and service-time
        estimates (a stream of bad inputs would otherwise make the queue admit more than the
        pipeline's runs can serve)."""
        if not self._done:
            self._done = True
            self._q._release(self._key, self._n, time.monotonic() - self._t0, self._unqueued, counted)

    def __enter__(self) -> _Ticket:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


async def with_deadline(work: Awaitable[T], timeout_s: float, what: str) -> T:
    """Await `work` for at most `timeout_s` seconds; past it, cancel it (its queued steps and model
    requests are dropped) and raise DeadlineError (HTTP 504).

    The work runs in the caller's task under `asyncio.timeout`: `asyncio.wait_for` would run it in a
    task of its own, one task more per predict and two loop passes more between the run's result and
    its answer (docs/serving.md, "Seventh round"). A `timeout_s` <= 0 never starts the work."""
    try:
        if timeout_s <= 0:  # as `wait_for` does: cancelled before it starts
            return await asyncio.wait_for(work, timeout_s)
        async with asyncio.timeout(timeout_s):
            return await work
    except TimeoutError:
        raise DeadlineError(f"{what}: no answer within timeout_s={timeout_s:g} s; the work was cancelled") from None
