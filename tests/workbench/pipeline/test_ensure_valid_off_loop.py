"""Regression (h5, q14): the first run of a new pipeline version validated it on a worker thread but then
stored it (`store.save_pipeline`, a write that can wait for a shared SQLite file) on the event loop, which
stalled every request of the process meanwhile. The write runs on a worker thread now; the loop keeps
serving while it waits (docs/serving.md, "Threads of one server process")."""

from __future__ import annotations

import asyncio
import threading

from workbench.pipeline import Pipeline

from .conftest import EXAMPLE

BLANK = {"pixels": [0.0] * 64}


async def test_a_new_pipeline_version_is_stored_off_the_event_loop(wb, monkeypatch):
    p = Pipeline.from_file(EXAMPLE / "digits_review.yaml")
    entered, release = threading.Event(), threading.Event()
    threads: list[int] = []
    real = wb.store.save_pipeline

    def save_pipeline(*args, **kwargs):  # held as a write waiting for a locked SQLite file would be
        threads.append(threading.get_ident())
        entered.set()
        assert release.wait(10), "the test never released the write: the event loop was blocked"
        return real(*args, **kwargs)

    monkeypatch.setattr(wb.store, "save_pipeline", save_pipeline)
    first = asyncio.create_task(wb.run(p, BLANK))
    assert await asyncio.to_thread(entered.wait, 30)  # the loop ran this while the write was held
    assert await asyncio.sleep(0.01, result=True)  # and keeps running other work
    release.set()
    result = await first
    assert result.ok and result.version == p.version
    assert threads and threading.get_ident() not in threads, threads
    assert p.version in {row.version for row in wb.store.pipeline_versions(p.name)}

    again = await wb.run(p, BLANK)  # the version is known now: stored once
    assert again.ok and len(threads) == 1
