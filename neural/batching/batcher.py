"""Dynamic batcher for one-shot models, after Triton's dynamic batcher.

Requests queue per sequence-length bucket. The scheduler takes the oldest queued request, and
runs a batch when `max_batch_size` requests of its bucket or smaller buckets are waiting, or when
that oldest request has waited `max_queue_delay_ms` (Triton's rule: delay counted from the oldest
request). The batch is padded to its bucket's bound. The model runs in one worker thread; callers
get awaitable `InferenceRequest` handles. A full queue raises `QueueFullError` and admits nothing;
admitted requests are always answered (a result, the batch's error, a timeout or a cancellation).

Reference: NVIDIA Triton Inference Server, "Dynamic Batcher" (model configuration docs).
"""

from __future__ import annotations

import bisect
import collections
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import BatcherClosedError, BatchExecutionError, QueueFullError, RequestTimeoutError
from ..metrics import ModelMetrics, multiprocess_dir
from .config import BatcherConfig
from .request import CANCELLED, DONE, QUEUED, RUNNING, TIMED_OUT, InferenceRequest, bounded_wait
from .stats import BatcherStats, BatchRecord

log = logging.getLogger("neural.batcher")

# run_batch(items, pad_to) -> one output per item, in the same order.
RunBatch = Callable[[list[Any], "int | None"], Sequence[Any]]


class DynamicBatcher:
    """Queue, batch and run requests for one model.

    `run_batch(items, pad_to)` is called in the worker thread with up to `max_batch_size` items
    and the sequence length to pad to (None when the model has no sequence axis); it returns one
    output per item in order. `length_fn(item) -> int` gives an item's sequence length (None: all
    items share one bucket and `pad_to` is None).
    """

    def __init__(
        self,
        name: str,
        run_batch: RunBatch,
        config: BatcherConfig | None = None,
        *,
        length_fn: Callable[[Any], int] | None = None,
        metrics: ModelMetrics | None = None,
        start: bool = True,
    ) -> None:
        self.name = name
        self.config = config or BatcherConfig()
        self._run_batch = run_batch
        self._length_fn = length_fn
        self.metrics = metrics or ModelMetrics(name)
        self._queue_gauge = None
        if multiprocess_dir() is None:
            self.metrics.queue_size.set_function(lambda: self._queued)  # read at scrape time: right when idle
        else:  # worker processes share files: a scrape-time function of this process cannot be read there
            self._queue_gauge = self.metrics.queue_size
        self.stats = BatcherStats()
        self.batch_log: collections.deque[BatchRecord] = collections.deque(maxlen=10_000)
        self._listeners: list[Callable[[BatchRecord], None]] = []
        self._cond = threading.Condition()
        self._queues: dict[int, collections.deque[InferenceRequest]] = {}
        self._deadlines: list[tuple[float, int, InferenceRequest]] = []
        self._n_queued = 0
        self._seq = itertools.count()
        self._batch_ids = itertools.count(1)
        self._closed = False
        self._recent_compute_s: collections.deque[float] = collections.deque(maxlen=32)
        self._busy = False  # a batch is running (on the worker, or on a caller's thread: `_dispatch`)
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread (done by the constructor unless `start=False`)."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"batcher-{self.name}", daemon=True)
                self._thread.start()

    def close(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop admitting requests. `drain=True` runs everything already queued first; `drain=False`
        fails queued requests with `BatcherClosedError`. Waits up to `timeout` s for the worker and
        for a batch a caller's thread is running (`InferenceRequest.dispatch(here=True)`)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._closed = True
            if not drain:
                for q in self._queues.values():
                    for req in q:
                        if req.state == QUEUED and req.future.set_running_or_notify_cancel():
                            req.state = DONE
                            req.future.set_exception(
                                BatcherClosedError(f"model {self.name!r}: batcher closed before the request ran")
                            )
                    q.clear()
                self._queued = 0
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(None if end is None else max(end - time.monotonic(), 0.0))
        with self._cond:  # `_dispatch` notifies when its batch ends on a closed batcher
            while self._busy and (end is None or time.monotonic() < end):
                self._cond.wait(None if end is None else end - time.monotonic())

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def _queued(self) -> int:
        return self._n_queued

    @_queued.setter
    def _queued(self, n: int) -> None:
        self._n_queued = n
        if self._queue_gauge is not None:
            self._queue_gauge.set(n)

    @property
    def queue_size(self) -> int:
        """Requests admitted and not yet running."""
        return self._queued

    def add_listener(self, fn: Callable[[BatchRecord], None]) -> None:
        """Call `fn(record)` after every batch, in the thread that ran it: the worker, or a caller's thread
        for a batch of one run by `dispatch(here=True)`; never two at once (exceptions are logged, not raised)."""
        self._listeners.append(fn)

    def reset_stats(self) -> None:
        """Zero the totals in `stats` and clear `batch_log` (metrics are cumulative and unaffected)."""
        with self._cond:
            self.stats = BatcherStats()
            self.batch_log.clear()

    # ---- admission -------------------------------------------------------------------------
    def submit(self, item: Any, *, timeout_s: float | None = None, hold: bool = False) -> InferenceRequest:
        """Admit one item and return its handle (await it, or call `.result()`).

        `timeout_s` (default: the config's `default_timeout_s`) is a deadline from now: a request
        still queued at its deadline is never run and fails with `RequestTimeoutError`.
        `hold=True`: queued as usual, but the worker is not woken for it; the caller must call
        `request.dispatch()` next (see there).
        Raises `QueueFullError` (nothing admitted) or `BatcherClosedError`.
        """
        return self.submit_many([item], timeout_s=timeout_s, hold=hold)[0]

    def submit_many(
        self, items: Iterable[Any], *, timeout_s: float | None = None, hold: bool = False
    ) -> list[InferenceRequest]:
        """Admit all items or none (QueueFullError when they do not all fit); handles in input order.
        `hold` as in `submit`.

        Raises ValueError when more items are given than the queue can ever hold.
        """
        items = list(items)
        if len(items) > self.config.max_queue_size:
            raise ValueError(
                f"model {self.name!r}: {len(items)} items exceed max_queue_size={self.config.max_queue_size}; submit "
                "them in chunks"
            )
        lengths = [self._length(i) for i in items]  # outside the lock: may tokenise
        timeout_s = self.config.default_timeout_s if timeout_s is None else timeout_s
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        now = time.monotonic()
        deadline = None if timeout_s is None else now + timeout_s
        with self._cond:
            if self._closed:
                raise BatcherClosedError(f"model {self.name!r}: batcher is closed; no new requests are admitted")
            if self._queued + len(items) > self.config.max_queue_size:
                self.stats.rejected += len(items)
                self.metrics.failure("rejected_queue_full", len(items))
                raise QueueFullError(self.name, self.config.max_queue_size, self._retry_after_s())
            if deadline is not None and len(self._deadlines) > 2 * (self._queued + len(items)) + 64:
                self._prune_deadlines()
            reqs = []
            for item, length in zip(items, lengths):
                req = InferenceRequest(next(self._seq), item, length, self._bucket(length), now, deadline, self)
                self._queues.setdefault(req.bucket, collections.deque()).append(req)
                if deadline is not None:
                    heapq.heappush(self._deadlines, (deadline, req.seq, req))
                reqs.append(req)
            self._queued += len(reqs)
            self.metrics.requests.inc(len(reqs))
            if not hold:
                self._cond.notify_all()
        return reqs

    def _dispatch(self, req: InferenceRequest, here: bool) -> bool:
        """Hand a request submitted with `hold=True` to the worker, or, with `here`, run it as a
        batch of one on the calling thread when that is what the worker would do next anyway: the
        worker idle, no batch running, `req` the only request queued, and no queue delay to wait
        for other requests (`max_queue_delay_ms` 0). Same bookkeeping as the worker's batches
        (queue count, metrics, stats, batch log, listeners); a cancelled or timed-out request is
        not run. Returns True when it ran here (its future is then done)."""
        with self._cond:
            if not (
                here
                and not self._busy
                and not self._closed
                and req.state == QUEUED
                and self._n_queued == 1
                and self.config.max_queue_delay_ms == 0
            ):
                self._cond.notify_all()
                return False
            batch, pad_to = self._take(req, self._candidates(req.bucket))
            self._busy = True
        try:
            self._execute(batch, pad_to)
        finally:
            with self._cond:
                self._busy = False
                if self._n_queued or self._closed:
                    self._cond.notify_all()  # the worker waited for this batch to end
        return True

    async def infer(self, item: Any, *, timeout_s: float | None = None) -> Any:
        """Submit one item and await its output. Raises as `submit` and `InferenceRequest.wait`."""
        return await self.submit(item, timeout_s=timeout_s).wait()

    async def infer_many(self, items: Iterable[Any], *, timeout_s: float | None = None) -> list[Any]:
        """Submit items (all or none) and await all outputs, in input order. The first error is raised
        after every request has finished; cancelling the caller cancels the still-queued ones."""
        return await await_all(self.submit_many(items, timeout_s=timeout_s))

    def infer_sync(self, item: Any, *, timeout_s: float | None = None) -> Any:
        """Blocking form of `infer` for threads without an event loop."""
        return self.submit(item, timeout_s=timeout_s).result()

    # ---- cancellation and timeouts (called from any thread) ---------------------------------
    def _cancel(self, req: InferenceRequest) -> bool:
        with self._cond:
            if req.state != QUEUED:
                return False
            req.state = CANCELLED
            self._queued -= 1
            self.stats.cancelled += 1
            self.metrics.failure("cancelled")
            req.future.cancel()
            return True

    def _time_out(self, req: InferenceRequest, where: str) -> RequestTimeoutError:
        """A waiter's deadline passed: fail the request if queued, or abandon it if running."""
        with self._cond:
            if req.state == QUEUED:
                return self._time_out_locked(req)
            err = RequestTimeoutError(self.name, _timeout_of(req), where)
            if req.state == RUNNING:
                req.state = TIMED_OUT  # the batch still finishes; this caller no longer waits for it
                self.stats.timed_out += 1
                self.metrics.failure("timeout")
            return err

    # ---- scheduling --------------------------------------------------------------------------
    def _length(self, item: Any) -> int:
        if self._length_fn is None:
            return 0
        n = int(self._length_fn(item))
        if n < 0:
            raise ValueError(f"model {self.name!r}: negative sequence length {n}")
        return n

    def _bucket(self, length: int) -> int:
        buckets = self.config.buckets
        if self._length_fn is not None and self.config.exact_lengths:
            return length
        if self._length_fn is None or buckets is None:
            return 0
        i = bisect.bisect_left(buckets, length)
        return buckets[i] if i < len(buckets) else 1 << 62  # overflow bucket

    def _retry_after_s(self) -> float:
        per_batch = (sum(self._recent_compute_s) / len(self._recent_compute_s)) if self._recent_compute_s else 0.05
        return per_batch * (self._queued / self.config.max_batch_size + 1)

    def _prune_deadlines(self) -> None:
        """Drop the deadline entries of requests no longer queued (batched, cancelled, timed out); under
        the lock. A request leaves the heap only when its deadline passes, so without this the heap held
        every request of the last `timeout_s` seconds with its inputs and result (measured: all 7,900
        `/v2` infers of an 8 s run still referenced). Called when the heap is more than twice the queue:
        amortised O(1) per request, the heap at most 2 x queued + 64 entries."""
        self._deadlines = [e for e in self._deadlines if e[2].state == QUEUED]
        heapq.heapify(self._deadlines)

    def _expire(self, now: float) -> None:
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, req = heapq.heappop(self._deadlines)
            if req.state == QUEUED:
                self._time_out_locked(req)

    def _time_out_locked(self, req: InferenceRequest) -> RequestTimeoutError:
        err = RequestTimeoutError(self.name, _timeout_of(req), "still queued; it was not run")
        self._queued -= 1
        req.state = TIMED_OUT
        self.stats.timed_out += 1
        self.metrics.failure("timeout")
        if req.future.set_running_or_notify_cancel():
            req.future.set_exception(err)
        return err

    def _head(self) -> InferenceRequest | None:
        head = None
        for q in self._queues.values():
            while q and q[0].state != QUEUED:
                q.popleft()
            if q and (head is None or q[0].seq < head.seq):
                head = q[0]
        return head

    def _candidates(self, bucket: int) -> list[collections.deque[InferenceRequest]]:
        if self.config.exact_lengths or not self.config.fill_from_smaller_buckets:
            return [self._queues[bucket]]
        return [self._queues[b] for b in sorted(self._queues) if b <= bucket]

    def _next_batch(self) -> tuple[list[InferenceRequest], int | None] | None:
        cfg = self.config
        delay_s = cfg.max_queue_delay_ms / 1000.0
        with self._cond:
            while True:
                now = time.monotonic()
                self._expire(now)
                head = self._head()
                if head is None:
                    if self._closed:
                        return None
                    wake = self._deadlines[0][0] - now if self._deadlines else None
                    self._cond.wait(bounded_wait(wake))
                    continue
                if self._busy:  # a caller's thread runs a batch (`_dispatch`): one batch at a time
                    wake = self._deadlines[0][0] - now if self._deadlines else None
                    self._cond.wait(bounded_wait(wake))
                    continue
                queues = self._candidates(head.bucket)
                waiting = sum(1 for q in queues for r in q if r.state == QUEUED)
                due = head.enqueued_at + delay_s
                if waiting >= cfg.max_batch_size or now >= due or self._closed:
                    self._busy = True
                    return self._take(head, queues)
                wake = due - now
                if self._deadlines:
                    wake = min(wake, self._deadlines[0][0] - now)
                self._cond.wait(bounded_wait(max(wake, 0.0)))

    def _take(
        self, head: InferenceRequest, queues: list[collections.deque[InferenceRequest]]
    ) -> tuple[list[InferenceRequest], int | None]:
        # the head's bucket first (oldest first), then smaller buckets padded up to it
        order = [self._queues[head.bucket]] + [q for q in reversed(queues) if q is not self._queues[head.bucket]]
        batch: list[InferenceRequest] = []
        for q in order:
            while q and len(batch) < self.config.max_batch_size:
                req = q.popleft()
                if req.state == QUEUED:
                    req.state = RUNNING
                    batch.append(req)
        self._queued -= len(batch)
        if self._length_fn is None:
            pad_to = None
        elif self.config.exact_lengths:
            pad_to = head.length
        elif self.config.pad_to_bucket and self.config.buckets is not None and head.bucket <= self.config.buckets[-1]:
            pad_to = head.bucket
        else:
            pad_to = max(r.length for r in batch)
        return batch, pad_to

    # ---- execution ---------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                nxt = self._next_batch()
            except Exception:  # never let the worker die: every later request of the model would wait forever
                log.exception("batcher %s: unexpected error choosing the next batch", self.name)
                time.sleep(0.1)  # an error that repeats is logged ten times a second, not in a busy loop
                continue
            if nxt is None:
                return
            try:
                self._execute(*nxt)
            except BaseException:  # never let the worker die: it would strand admitted requests
                log.exception("batcher %s: unexpected error in the worker", self.name)
            finally:
                with self._cond:
                    self._busy = False

    def _execute(self, batch: list[InferenceRequest], pad_to: int | None) -> None:
        live = [r for r in batch if r.future.set_running_or_notify_cancel()]
        if not live:
            return
        batch_id = next(self._batch_ids)
        start = time.monotonic()
        for r in live:
            r.queue_time_s = start - r.enqueued_at
            self.metrics.queue_time.observe(r.queue_time_s)
        error: BaseException | None = None
        outputs: Sequence[Any] = ()
        try:
            outputs = self._run_batch([r.item for r in live], pad_to)
            if len(outputs) != len(live):
                raise RuntimeError(f"run_batch returned {len(outputs)} outputs for {len(live)} inputs")
        except BaseException as exc:
            error = exc
        compute_s = time.monotonic() - start
        self._recent_compute_s.append(compute_s)
        record = BatchRecord(
            batch_id,
            len(live),
            pad_to,
            start,
            compute_s,
            max(r.queue_time_s or 0.0 for r in live),
            error is None,
            None if error is None else f"{type(error).__name__}: {error}",
        )
        # stats first, results second: a caller that sees its result also sees the batch counted
        with self._cond:
            self.stats.batches += 1
            self.stats.requests += len(live)
            self.stats.failed_batches += error is not None
            self.stats.batch_sizes.append(len(live))
            self.stats.largest_batch = max(self.stats.largest_batch, len(live))
            self.batch_log.append(record)
        self.metrics.batch_size.observe(len(live))
        self.metrics.compute_time.observe(compute_s)
        if error is not None:
            self.metrics.failure("model_error", len(live))
            log.warning("model %s: batch %d (%d requests) failed: %r", self.name, batch_id, len(live), error)
        end = time.monotonic()
        for i, r in enumerate(live):
            r.batch_id, r.batch_size, r.compute_time_s = batch_id, len(live), compute_s
            with self._cond:
                if r.state == RUNNING:
                    r.state = DONE
            if error is None:
                self.metrics.latency.observe(end - r.enqueued_at)
                r.future.set_result(outputs[i])
            else:
                err = BatchExecutionError(self.name, batch_id, len(live), error)
                err.__cause__ = error
                r.future.set_exception(err)
        for fn in list(self._listeners):
            try:
                fn(record)
            except Exception:
                log.exception("batcher %s: batch listener failed", self.name)


def _timeout_of(req: InferenceRequest) -> float:
    return (req.deadline - req.enqueued_at) if req.deadline is not None else 0.0


async def await_all(reqs: list[InferenceRequest]) -> list[Any]:
    """Await admitted requests, outputs in order. The first error is raised after every request
    has finished; cancelling the caller cancels the requests still queued."""
    import asyncio

    try:
        results = await asyncio.gather(*(r.wait() for r in reqs), return_exceptions=True)
    except asyncio.CancelledError:
        for r in reqs:
            r.cancel()
        raise
    for res in results:
        if isinstance(res, BaseException):
            raise res
    return list(results)
