"""A run carried by threads (handoff.run_steps) in a real Workbench: with the batcher and recorder
idle, one pool thread runs the model's batch of one and writes the durable commit; a model node with
a deadline is awaited on the loop (its held request released to the batcher's worker); concurrent
runs still batch and group-commit on the worker and recorder threads. Real torch model, CLIPS, SQLite."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch
from sqlalchemy import func, select

from neural.batching import BatcherConfig
from workbench.pipeline import Pipeline
from workbench.store import RunRow

from .conftest import digit_pixels, digits_signature, make_digits_module


def _workbench(dirs, tmp_path, delay_ms: float = 0.0):
    from workbench import Workbench

    kb, pipes = dirs
    wb = Workbench(knowledge_base_dir=kb, pipeline_dir=pipes, model_catalog=tmp_path / "none.yaml", durable=True)
    wb.register_model(
        "digits-mlp",
        make_digits_module(),
        signature=digits_signature(),
        task="classification",
        batcher_config=BatcherConfig(max_batch_size=32, max_queue_delay_ms=delay_ms, buckets=None),
    )
    return wb


def _spy(wb):
    """Thread names of the model's batches and of the store's writes."""
    seen: dict[str, list] = {"batches": [], "writes": [], "in_flight": []}
    wb.get_model("digits-mlp").batcher.add_listener(lambda rec: seen["batches"].append(threading.current_thread().name))
    store = wb.store.inner
    orig = store.record_runs

    def record_runs(runs, **kw):
        seen["writes"].append(threading.current_thread().name)
        seen["in_flight"].append(wb.executor._running)  # runs in flight when this write began
        return orig(runs, **kw)

    store.record_runs = record_runs
    return seen


async def test_an_idle_server_runs_the_model_and_the_commit_on_the_runs_pool_thread(dirs, tmp_path):
    wb = _workbench(dirs, tmp_path)
    seen = _spy(wb)
    try:
        r = await wb.run("digits_review", {"id": "a1", "pixels": digit_pixels(3)}, explain=True)
        assert r.ok and r.outputs["digit"] == 3
        with wb.store.inner.session() as s:  # durable: committed before run() returned
            assert s.get(RunRow, r.run_id) is not None
        assert len(seen["batches"]) == 1 and len(seen["writes"]) == 1
        assert seen["batches"][0] == seen["writes"][0] and not seen["batches"][0].startswith("batcher")
        assert r.explanation["model_calls"][0]["batch_size"] == 1
        b = wb.get_model("digits-mlp").batcher
        assert b.queue_size == 0 and b.stats.requests == 1
    finally:
        wb.close()


async def test_a_model_node_with_a_deadline_is_awaited_on_the_loop(dirs, tmp_path):
    wb = _workbench(dirs, tmp_path)
    seen = _spy(wb)
    try:
        p = wb.get_pipeline("digits_review")
        doc = p.to_yaml().replace("model: digits-mlp\n", "model: digits-mlp\n    timeout_s: 5\n", 1)
        assert "timeout_s: 5" in doc
        r = await wb.run(Pipeline.from_yaml(doc), {"pixels": digit_pixels(7)})
        assert r.ok and r.outputs["digit"] == 7
        assert seen["batches"] == ["batcher-digits-mlp"]  # released to the worker, not run on the pool
    finally:
        wb.close()


async def test_concurrent_runs_batch_on_the_worker_and_commit_in_groups(dirs, tmp_path):
    wb = _workbench(dirs, tmp_path, delay_ms=20.0)
    seen = _spy(wb)
    try:
        rs = await asyncio.gather(*(wb.run("digits_review", {"pixels": digit_pixels(i % 10)}) for i in range(24)))
        assert all(r.ok for r in rs) and [r.outputs["digit"] for r in rs] == [i % 10 for i in range(24)]
        assert set(seen["batches"]) == {"batcher-digits-mlp"} and len(seen["batches"]) < 24
        assert len(seen["writes"]) < 24  # group commit: more than one run per transaction
        # a run's own pool thread writes its commit only when it is the one run in flight (the last
        # runs of the gather may be); with others in flight the recorder's thread writes the group
        for thread, in_flight in zip(seen["writes"], seen["in_flight"]):
            assert in_flight <= 1 or not thread.startswith("workbench-run"), (thread, in_flight)
        assert any(in_flight > 1 for in_flight in seen["in_flight"])
        with wb.store.inner.session() as s:
            assert all(s.get(RunRow, r.run_id) is not None for r in rs)
    finally:
        wb.close()


class _Gated(torch.nn.Module):
    """The digits model whose forward blocks until `release` is set (`entered` is set on entry)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = make_digits_module()
        self.entered, self.release = threading.Event(), threading.Event()

    def forward(self, x):
        self.entered.set()
        assert self.release.wait(30)
        return self.lin(x)


async def test_a_run_cancelled_while_its_model_runs_on_the_pool_thread_is_not_carried_on(dirs, tmp_path):
    # the caller left (client disconnect, request timeout) during the batch of one that its pool thread
    # runs: the batch finishes, but the run's later steps and its commit are not done (as before the
    # hand-off: a step already running finishes, nothing after it starts)
    from workbench import Workbench

    kb, pipes = dirs
    wb = Workbench(knowledge_base_dir=kb, pipeline_dir=pipes, model_catalog=tmp_path / "none.yaml", durable=True)
    gated = _Gated()
    wb.register_model(
        "digits-mlp",
        gated,
        signature=digits_signature(),
        task="classification",
        batcher_config=BatcherConfig(max_batch_size=32, max_queue_delay_ms=0.0, buckets=None),
    )
    seen = _spy(wb)
    try:
        task = asyncio.ensure_future(wb.run("digits_review", {"pixels": digit_pixels(5)}))
        assert await asyncio.to_thread(gated.entered.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gated.release.set()
        await asyncio.to_thread(wb.pool.shutdown, True)  # every step the pool started has ended
        wb.recorder.flush()
        assert seen["batches"] and not seen["batches"][0].startswith("batcher")  # it ran on the pool thread
        assert seen["writes"] == []
        with wb.store.inner.session() as s:
            assert s.scalar(select(func.count()).select_from(RunRow)) == 0
    finally:
        gated.release.set()
        wb.close()


async def test_a_finished_run_leaves_no_reference_cycle_for_the_cyclic_collector(dirs, tmp_path):
    """Each future keeps its done callbacks (the chain's bound methods) after they ran: before the
    chain released its references, every run's step, requests, futures and result stayed in a cycle
    (~130 objects a predict) until a full collection, which stopped Ray replicas 50-160 ms at a time
    under load. Now reference counting frees them: no run object is left for the collector."""
    import gc

    from neural.batching.request import InferenceRequest
    from workbench.pipeline.handoff import _Chain
    from workbench.pipeline.result import RunResult
    from workbench.pipeline.steps import StepRun

    wb = _workbench(dirs, tmp_path)
    try:
        await wb.run("digits_review", {"id": "w", "pixels": digit_pixels(1)}, explain=True)  # warm caches
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for d in (3, 5, 8):
                r = await wb.run("digits_review", {"id": f"a{d}", "pixels": digit_pixels(d)}, explain=True)
                assert r.ok and r.outputs["digit"] == d
            for _ in range(2):  # concurrent runs: requests waited for by batcher callbacks, group commits
                rs = await asyncio.gather(*(wb.run("digits_review", {"pixels": digit_pixels(d)}) for d in range(8)))
                assert all(r.ok for r in rs)
            del r, rs
            gc.collect()
            kinds = (_Chain, StepRun, RunResult, InferenceRequest)
            left = [type(o).__name__ for o in gc.garbage if isinstance(o, kinds)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert left == []
    finally:
        wb.close()
