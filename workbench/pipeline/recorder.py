"""Writes runs with their traces to the store from one background thread, with group commit.

Each run and its trace events are written in one transaction; when several runs are waiting,
they share a transaction (group commit), and if that transaction fails each run is retried in a
transaction of its own, so one bad run never takes others down and no run is half-written.
Callers either await `record(...)` (resolves once the run is committed) or `submit(...)` and go
on (write-behind: the run id is known at once); `flush()` waits until everything submitted
before it is committed, which is how readers in the same process see their own writes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Sequence
from typing import Any

from workbench.store import RunRow, Store, TraceEvent
from workbench.store.store import run_columns

from .identity import RUN_IDENTITY

log = logging.getLogger("workbench.recorder")
_STOP = object()


class _Flush:
    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: concurrent.futures.Future = concurrent.futures.Future()


class RunRecorder:
    """Background writer of `(RunRow, [TraceEvent])` pairs; `max_group` runs per transaction at most.

    `served_by` (set by a Ray replica or Ray Data worker) is recorded with every run that names none;
    `skip_existing` makes writes idempotent (a run whose id is stored already is left alone: a request
    retried on another replica with the id its ingress chose is recorded once).
    """

    def __init__(self, store: Store, max_group: int = 64):
        self.store = store
        self.max_group = max_group
        self.served_by: str | None = None
        self.skip_existing = False
        self._q: queue.Queue = queue.Queue()
        self._writing = threading.Lock()  # held while a group is written (by the thread or a caller)
        self._thread = threading.Thread(target=self._loop, name="workbench-recorder", daemon=True)
        self._closed = False
        self._accepting = threading.Lock()  # the closed check and the put are one step (close puts _STOP last)
        self._thread.start()

    def submit(
        self, run: RunRow | dict[str, Any], events: Sequence[TraceEvent], *, here: bool = False
    ) -> concurrent.futures.Future:
        """Queue a run (a `RunRow`, or a dict of its columns) for writing; the future resolves to the
        run id once committed.

        `here=True` (a caller about to wait for the commit anyway, on a worker thread, never the event
        loop): when the recorder is idle (nothing queued, no group being written) the run is written
        in its own transaction on the calling thread before this returns (no hop to the recorder's
        thread and back); otherwise it is queued as usual. A failure is in the future either way.

        The id and `served_by` of the caller's `RUN_IDENTITY` (when set) replace the run's own; the
        run's id is written back into `run` (a `RunRow` or a dict), so the caller learns it."""
        row = run_columns(run)
        ident = RUN_IDENTITY.get()
        if ident is not None:
            row["id"] = ident.take_id() or row["id"]
            row["served_by"] = row["served_by"] or ident.served_by
        row["served_by"] = row["served_by"] or self.served_by
        if isinstance(run, RunRow):
            run.id = row["id"]
        elif isinstance(run, dict):
            run["id"] = row["id"]
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._accepting:
            if self._closed:
                raise RuntimeError("run recorder is closed")
            inline = here and self._q.empty() and self._writing.acquire(blocking=False)
            if not inline:
                self._q.put((row, list(events), fut))
        if inline:  # `close` waits for `_writing` after the thread stops
            try:
                self._write_group([(row, list(events), fut)])
            finally:
                self._writing.release()
        return fut

    async def record(self, run: RunRow | dict[str, Any], events: Sequence[TraceEvent]) -> str:
        """Write a run and its trace (one transaction); returns the run id when committed.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the write failed; nothing of this run is stored.
        """
        return await asyncio.wrap_future(self.submit(run, events))

    def record_sync(self, run: RunRow | dict[str, Any], events: Sequence[TraceEvent]) -> str:
        return self.submit(run, events).result()

    def flush_future(self) -> concurrent.futures.Future:
        """A future that resolves once every run submitted before this call is written (or failed)."""
        f = _Flush()
        with self._accepting:
            if not self._closed:
                self._q.put(f)
                return f.future
        f.future.set_result(None)
        return f.future

    def flush(self, timeout: float | None = 30.0) -> None:
        """Block until every run submitted before this call is written (or has failed)."""
        self.flush_future().result(timeout)

    async def aflush(self) -> None:
        await asyncio.wrap_future(self.flush_future())

    def close(self, timeout: float | None = 30.0) -> None:
        """Write everything queued, then stop the thread."""
        with self._accepting:  # a submit either queued before _STOP (written) or sees `_closed` (raises)
            if self._closed:
                return
            self._closed = True
            self._q.put(_STOP)
        self._thread.join(timeout)
        if self._writing.acquire(timeout=-1 if timeout is None else timeout):  # a caller's write in progress
            self._writing.release()

    def _loop(self) -> None:
        while True:
            item = self._q.get()
            if item is _STOP:
                return
            if isinstance(item, _Flush):
                with self._writing:  # a run a caller is writing (`submit(here=True)`) was submitted before
                    item.future.set_result(None)
                continue
            group = [item]
            stop = False
            flushes: list[_Flush] = []
            while len(group) < self.max_group:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stop = True
                    break
                if isinstance(nxt, _Flush):  # everything before it is in this group
                    flushes.append(nxt)
                    break
                group.append(nxt)
            with self._writing:
                self._write_group(group)
            for f in flushes:
                f.future.set_result(None)
            if stop:
                return

    def _write_group(self, group: list[tuple[dict[str, Any], list[TraceEvent], concurrent.futures.Future]]) -> None:
        try:
            self._write(group)
        except Exception as exc:
            if len(group) == 1:
                run, _, fut = group[0]
                log.exception("recording run %s failed", run["id"])
                _fail(fut, exc)
                return
            for one in group:  # isolate the failing run(s)
                try:
                    self._write([one])
                except Exception as exc:
                    log.exception("recording run %s failed", one[0]["id"])
                    _fail(one[2], exc)
                else:
                    _done(one[2], one[0]["id"])
            return
        for run, _, fut in group:
            _done(fut, run["id"])

    def _write(self, group: list[tuple[dict[str, Any], list[TraceEvent], concurrent.futures.Future]]) -> None:
        # the store's one run-writing path
        self.store.record_runs([(run, evs) for run, evs, _ in group], skip_existing=self.skip_existing)


def _done(fut: concurrent.futures.Future, value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: concurrent.futures.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
