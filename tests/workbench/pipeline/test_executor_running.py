"""`Executor._running` (runs in flight; 1 means a run may commit on its own pool thread) is counted
correctly when callers on several event loops (threads) run pipelines at once."""

from __future__ import annotations

import asyncio
import threading
import time

from workbench.pipeline.executor import Executor


class _Interleaving(Executor):
    """Each read of the counter lets another thread run before the write that follows it: a read-modify-
    write not done under a lock loses updates every time, not once in a million runs."""

    @property
    def _running(self) -> int:
        value = self.__dict__["_count"]
        time.sleep(0.0002)  # another caller's thread runs here
        return value

    @_running.setter
    def _running(self, value: int) -> None:
        self.__dict__["_count"] = value

    async def _run(self, *args):
        self.seen.append(self.__dict__["_count"])  # runs in flight while this one runs
        await asyncio.sleep(0)


def test_runs_on_several_event_loops_at_once_are_counted_exactly():
    ex = _Interleaving(None)
    ex.seen = []

    async def caller() -> None:
        for _ in range(25):
            await ex.run(None, {})

    threads = [threading.Thread(target=asyncio.run, args=(caller(),)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(ex.seen) == 6 * 25 and min(ex.seen) >= 1  # each run was counted while it ran
    assert ex.__dict__["_count"] == 0  # every increment matched by its decrement: none lost
