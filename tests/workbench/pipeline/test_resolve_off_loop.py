"""A run resolves its pipeline name (store stage query, pipeline folder, file parse) about once a
second; that resolution ran on the event loop, so the predict that found it stale paid the SQL query
there, and on a replica sharing a SQLite file with another the query can wait for the file, stalling
every request of the process. It runs on a worker thread now; promotions and new versions are seen
as before (this Workbench's at once, another replica's within RESOLVE_TTL_S)."""

from __future__ import annotations

import asyncio
import threading

from workbench.facade import pipelines as facade_pipelines
from workbench.pipeline import Pipeline

from .conftest import EXAMPLE, digit_pixels

BLANK = {"pixels": [0.0] * 64}


def _two_versions(wb) -> tuple[str, str]:
    p = Pipeline.from_file(EXAMPLE / "digits_review.yaml")
    v1 = wb.save_pipeline(p, stage="production")
    p.nodes["result"].config["fields"]["reason"] = "coalesce(decision.reason, 'no ink')"
    v2 = wb.save_pipeline(p)
    assert v1 != v2
    return v1, v2


def _record_stage_queries(wb, monkeypatch, threads: list[int], hold=None):
    real = wb.store.stages

    def stages(name: str):
        threads.append(threading.get_ident())
        out = real(name)
        if hold is not None:
            hold(out)
        return out

    monkeypatch.setattr(wb.store, "stages", stages)


async def test_the_event_loop_never_runs_the_stage_query_and_another_replicas_promotion_is_seen(wb, monkeypatch):
    v1, v2 = _two_versions(wb)
    threads: list[int] = []
    _record_stage_queries(wb, monkeypatch, threads)
    monkeypatch.setattr(facade_pipelines, "RESOLVE_TTL_S", 0.0)  # every run resolves again
    for _ in range(3):
        assert (await wb.run("digits_review", BLANK)).version == v1
    loop_thread = threading.get_ident()
    assert len(threads) >= 3 and loop_thread not in threads, (loop_thread, threads)
    wb.store.inner.set_stage("digits_review", v2, "production")  # another replica promotes in the shared store
    r = await wb.run("digits_review", BLANK)
    assert r.version == v2 and r.outputs["reason"] == "no ink"
    assert loop_thread not in threads


async def test_a_promotion_during_a_refresh_is_not_hidden_by_the_refresh(wb, monkeypatch):
    """The loop keeps serving while a refresh waits for the store; a refresh that read the stages
    before this Workbench promoted is not cached afterwards (the next run sees the promotion)."""
    v1, v2 = _two_versions(wb)
    entered, release = threading.Event(), threading.Event()
    armed = [True]

    def hold(_out) -> None:  # the stages were read (v1 in production); wait as a locked SQLite file would
        if armed[0]:
            armed[0] = False
            entered.set()
            assert release.wait(30)

    threads: list[int] = []
    _record_stage_queries(wb, monkeypatch, threads, hold)
    first = asyncio.create_task(wb.run("digits_review", digit_pixels_input()))
    assert await asyncio.to_thread(entered.wait, 30)  # the loop ran this while the query was held
    assert wb.promote("digits_review", v2) == v2
    release.set()
    assert (await first).version == v1  # resolved before the promotion
    r = await wb.run("digits_review", BLANK)  # within RESOLVE_TTL_S of the refresh: still the promotion
    assert r.version == v2 and r.outputs["reason"] == "no ink"
    assert threading.get_ident() not in threads


def digit_pixels_input() -> dict:
    return {"pixels": digit_pixels(4)}
