"""Dynamic batcher: isolation, ordering, buckets, timeouts, cancellation, back-pressure, failures."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
import time

import pytest

from neural.batching import BatcherConfig, DynamicBatcher
from neural.errors import BatcherClosedError, BatchExecutionError, QueueFullError, RequestTimeoutError
from neural.metrics import METRICS_REGISTRY


class Recorder:
    """A model that returns (item, pad_to, call number) and can be held at a gate."""

    def __init__(self, fail_on: object = None) -> None:
        self.calls: list[tuple[list, int | None]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail_on = fail_on

    def __call__(self, items: list, pad_to: int | None) -> list:
        self.entered.set()
        self.gate.wait(60)  # a test that holds the gate opens it itself; 60 s only ends a broken test
        self.calls.append((list(items), pad_to))
        if self.fail_on is not None and self.fail_on in items:
            raise ValueError(f"cannot handle {self.fail_on!r}")
        return [(item, pad_to, len(self.calls)) for item in items]

    def executed(self) -> list:
        return [i for items, _ in self.calls for i in items]


def make(model, name, **cfg) -> DynamicBatcher:
    length = cfg.pop("length_fn", None)
    return DynamicBatcher(name, model, BatcherConfig(**cfg), length_fn=length)


async def test_isolation_and_ordering_under_concurrency():
    model = Recorder()
    b = make(model, "iso", max_batch_size=8, max_queue_delay_ms=20, buckets=(4, 8, 16), length_fn=lambda it: it[1])
    items = [(i, 1 + (i * 7) % 15) for i in range(200)]

    async def one(it):
        await asyncio.sleep((it[0] % 5) * 0.001)
        return await b.infer(it)

    results = await asyncio.gather(*(one(it) for it in items))
    for it, (got, pad_to, _) in zip(items, results):
        assert got == it  # each caller gets exactly its own output
        assert pad_to >= it[1] and pad_to in (4, 8, 16)
    assert sorted(model.executed()) == sorted(items)  # every request ran exactly once
    assert b.stats.requests == 200 and b.stats.batches == len(model.calls)
    assert b.stats.max_batch_size > 1 and b.stats.max_batch_size <= 8
    # within one bucket, requests run in arrival (FIFO) order
    arrival = {it: n for n, it in enumerate(model.executed())}
    for bucket in (4, 8, 16):
        same = [
            it for items_, _ in model.calls for it in items_ if it[1] <= bucket and (bucket == 4 or it[1] > bucket // 2)
        ]
        assert [arrival[it] for it in same] == sorted(arrival[it] for it in same)
    b.close()


async def test_bucket_padding_groups_smaller_requests_under_the_oldest():
    model = Recorder()
    model.gate.clear()
    b = make(model, "buckets", max_batch_size=16, max_queue_delay_ms=1, buckets=(4, 8, 16), length_fn=lambda it: it)
    first = b.submit(1)
    assert model.entered.wait(5)
    reqs = b.submit_many([12, 3, 7, 2, 16, 5])
    model.gate.set()
    assert (await first)[1] == 4
    outs = [await r for r in reqs]
    # the oldest waiting (12) sets bucket 16; everything <= 16 joins it and is padded to 16
    assert [o[1] for o in outs] == [16] * 6
    assert {r.batch_id for r in reqs} == {reqs[0].batch_id} and reqs[0].batch_size == 6
    b.close()


async def test_partial_batch_runs_after_max_queue_delay():
    model = Recorder()
    b = make(model, "delay", max_batch_size=64, max_queue_delay_ms=50)
    t0 = time.monotonic()
    await asyncio.wait_for(b.infer("lonely"), 60)  # runs alone, without a second request to fill the batch
    assert time.monotonic() - t0 >= 0.045  # not before the delay (an upper bound is a benchmark's question)
    assert model.calls == [(["lonely"], None)]
    b.close()


async def test_full_batch_does_not_wait_for_the_delay():
    model = Recorder()
    b = make(model, "full", max_batch_size=4, max_queue_delay_ms=3_600_000)
    out = await asyncio.wait_for(b.infer_many(["a", "b", "c", "d"]), 60)  # an hour's delay would time this out
    assert [o[0] for o in out] == ["a", "b", "c", "d"] and list(b.stats.batch_sizes) == [4]
    b.close()


async def test_timeout_of_a_queued_request_never_runs_it():
    model = Recorder()
    model.gate.clear()
    b = make(model, "timeout", max_batch_size=1, max_queue_delay_ms=0)
    running = b.submit("slow")
    assert model.entered.wait(5)
    late = b.submit("late", timeout_s=0.05)
    with pytest.raises(RequestTimeoutError, match="timeout.*queued"):
        await late
    model.gate.set()
    assert (await running)[0] == "slow"
    await b.infer("after")
    assert "late" not in model.executed() and b.stats.timed_out == 1
    b.close()


async def test_timeout_while_running_returns_promptly():
    model = Recorder()
    model.gate.clear()
    b = make(model, "timeout-run", max_batch_size=4, max_queue_delay_ms=0)
    req = b.submit("x", timeout_s=0.1)
    with pytest.raises(RequestTimeoutError):
        await req
    assert model.calls == []  # the caller is answered while its batch is still held at the gate
    model.gate.set()
    b.close()


async def test_cancelling_the_caller_cancels_a_queued_request():
    model = Recorder()
    model.gate.clear()
    b = make(model, "cancel", max_batch_size=1, max_queue_delay_ms=0)
    running = b.submit("first")
    assert model.entered.wait(5)
    task = asyncio.create_task(b.infer("cancel-me"))
    await asyncio.sleep(0)  # one loop step: the task runs `submit` (synchronous) and suspends in `wait`
    assert b.queue_size == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert b.queue_size == 0
    model.gate.set()
    await running
    await b.infer("next")
    assert "cancel-me" not in model.executed()
    assert b.stats.cancelled == 1
    b.close()


async def test_cancel_handle_and_sync_result():
    model = Recorder()
    model.gate.clear()
    b = make(model, "cancel-sync", max_batch_size=1, max_queue_delay_ms=0)
    running = b.submit("r")
    assert model.entered.wait(5)
    queued = b.submit("q")
    assert queued.cancel() is True
    assert running.cancel() is False  # already running: it completes
    model.gate.set()
    assert running.result(5)[0] == "r"
    with pytest.raises(concurrent.futures.CancelledError):
        queued.result(1)
    b.close()


async def test_full_queue_raises_and_keeps_admitted_work():
    model = Recorder()
    model.gate.clear()
    b = make(model, "backpressure", max_batch_size=2, max_queue_delay_ms=0, max_queue_size=4)
    running = b.submit("run")
    assert model.entered.wait(5)
    admitted = [b.submit(f"q{i}") for i in range(4)]
    with pytest.raises(QueueFullError) as info:
        b.submit("overflow")
    assert info.value.model == "backpressure" and info.value.retry_after_s > 0
    with pytest.raises(QueueFullError):
        b.submit_many(["a", "b"])  # all or none
    model.gate.set()
    assert [(await r)[0] for r in admitted] == ["q0", "q1", "q2", "q3"]
    await running
    assert "overflow" not in model.executed() and b.stats.rejected == 3
    with pytest.raises(ValueError, match="max_queue_size"):
        b.submit_many(["x"] * 5)
    b.close()


async def test_failing_model_fails_only_its_batch():
    model = Recorder(fail_on="bad")
    model.gate.clear()
    b = make(model, "failing", max_batch_size=2, max_queue_delay_ms=0)
    blocker = b.submit("blocker")
    assert model.entered.wait(5)
    bad_batch = b.submit_many(["good-1", "bad"])
    good_batch = b.submit_many(["good-2", "good-3"])
    model.gate.set()
    await blocker
    for r in bad_batch:
        with pytest.raises(
            BatchExecutionError,
            match=r"model 'failing' failed on batch \d+ \(2 requests\): ValueError: cannot handle 'bad'",
        ) as info:
            await r
        assert isinstance(info.value.__cause__, ValueError)
    assert [(await r)[0] for r in good_batch] == ["good-2", "good-3"]
    assert (await b.infer("later"))[0] == "later"  # the batcher keeps serving
    assert b.stats.failed_batches == 1
    b.close()


async def test_wrong_number_of_outputs_is_a_batch_error():
    b = DynamicBatcher("short", lambda items, pad: items[:-1], BatcherConfig(max_queue_delay_ms=0))
    with pytest.raises(BatchExecutionError, match="returned 0 outputs for 1 inputs"):
        await b.infer("x")
    b.close()


def test_sync_callers_from_threads_and_close_drains():
    model = Recorder()
    b = make(model, "threads", max_batch_size=16, max_queue_delay_ms=10)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda i: b.infer_sync(i, timeout_s=10), range(64)))
    assert [o[0] for o in outs] == list(range(64))
    model.gate.clear()
    reqs = [b.submit(i) for i in range(5)]
    closer = threading.Thread(target=b.close)
    closer.start()
    with b._cond:  # close() marks the batcher closed and notifies under this condition, then drains
        assert b._cond.wait_for(lambda: b.closed, timeout=10)
    with pytest.raises(BatcherClosedError):
        b.submit("too late")
    model.gate.set()
    closer.join(5)
    assert [r.result(1)[0] for r in reqs] == list(range(5))  # admitted work finished, not dropped


async def test_metrics_count_requests_batches_and_failures():
    model = Recorder(fail_on="boom")
    b = make(model, "metered", max_batch_size=4, max_queue_delay_ms=1)
    await b.infer_many(["a", "b", "c"])
    with pytest.raises(BatchExecutionError):
        await b.infer("boom")
    get = METRICS_REGISTRY.get_sample_value
    assert get("workbench_model_requests_total", {"model": "metered", "version": ""}) == 4
    assert get("workbench_model_failures_total", {"model": "metered", "version": "", "reason": "model_error"}) == 1
    assert get("workbench_model_batch_size_count", {"model": "metered", "version": ""}) == b.stats.batches
    assert get("workbench_model_request_latency_seconds_count", {"model": "metered", "version": ""}) == 3
    assert get("workbench_model_queue_time_seconds_count", {"model": "metered", "version": ""}) == 4
    b.close()


def test_config_validation():
    with pytest.raises(ValueError, match="max_batch_size"):
        BatcherConfig(max_batch_size=0)
    with pytest.raises(ValueError, match="buckets"):
        BatcherConfig(buckets=(8, 4))
    with pytest.raises(ValueError, match="max_queue_delay_ms"):
        BatcherConfig(max_queue_delay_ms=-1)


async def test_exact_lengths_never_pads_or_mixes_lengths():
    model = Recorder()
    b = make(model, "exact", max_batch_size=8, max_queue_delay_ms=2, exact_lengths=True, length_fn=lambda it: it[1])
    items = [(i, 3 + i % 3) for i in range(12)]
    outs = await b.infer_many(items)
    assert [o[0] for o in outs] == items
    for batch, pad_to in model.calls:
        assert {it[1] for it in batch} == {pad_to}
    assert sorted(b.stats.batch_sizes) == [4, 4, 4]  # counted before the results were delivered
    b.close()


async def test_strict_buckets_do_not_mix_bucket_sizes():
    model = Recorder()
    model.gate.clear()
    b = make(
        model,
        "strict",
        max_batch_size=16,
        max_queue_delay_ms=1,
        buckets=(4, 8, 16),
        pad_to_bucket=False,
        fill_from_smaller_buckets=False,
        length_fn=lambda it: it,
    )
    first = b.submit(1)
    assert model.entered.wait(5)
    reqs = b.submit_many([12, 3, 7, 2, 16, 5])
    model.gate.set()
    await first
    outs = {r.item: (await r)[1] for r in reqs}
    assert outs == {12: 16, 16: 16, 3: 3, 2: 3, 7: 7, 5: 7}  # grouped by bucket, padded to the longest in the group
    b.close()


def test_micro_batch_plan_is_optimal_and_complete():
    import itertools

    from neural.text.microbatch import plan_micro_batches

    def cost(groups, lengths, a):
        return sum(a + len(g) * max(lengths[i] for i in g) for g in groups)

    for lengths in ([5, 100, 6, 98, 30, 7], [3, 3, 3, 3], [1, 50, 2, 49, 3, 48, 4]):
        for a in (0.5, 8, 32, 1000):
            plan = plan_micro_batches(lengths, a)
            assert sorted(i for g in plan for i in g) == list(range(len(lengths)))
            order = sorted(range(len(lengths)), key=lambda i: lengths[i])
            brute = min(
                cost([order[i:j] for i, j in zip((0, *cuts), (*cuts, len(order)))], lengths, a)
                for r in range(len(order))
                for cuts in itertools.combinations(range(1, len(order)), r)
            )
            assert cost(plan, lengths, a) == brute
    assert plan_micro_batches([5, 100], 1000) == [[0, 1]] and plan_micro_batches([], 3) == []


async def test_answered_requests_with_a_deadline_are_not_kept_until_it_passes():
    """A request left the deadline heap only when its deadline passed: every `/v2` infer of the last
    `timeout_s` seconds stayed referenced with its inputs and result (7,900 after an 8 s run). Now the
    heap is pruned of requests no longer queued; an answered request is freed."""
    import gc
    import weakref

    class Item:  # an input that can be watched
        pass

    b = make(
        lambda items, pad_to: [None] * len(items),
        "deadline-heap",
        max_batch_size=4,
        max_queue_delay_ms=0,
        default_timeout_s=600,
    )
    item = Item()
    gone = weakref.ref(item)
    assert await b.submit(item) is None
    del item
    for i in range(500):
        await b.infer(i)
    gc.collect()
    assert gone() is None
    assert len(b._deadlines) <= 2 * b._queued + 64
    b.close()


async def test_batch_sizes_are_bounded_and_the_totals_cover_every_call():
    """`stats.batch_sizes` was a list growing by one entry per model call for as long as the server ran;
    it keeps the last `BATCH_SIZES_KEPT` sizes, while mean and max cover every call."""
    from neural.batching import stats as stats_mod

    b = make(lambda items, pad_to: [None] * len(items), "sizes-kept", max_batch_size=4, max_queue_delay_ms=0)
    b.stats = stats_mod.BatcherStats(batch_sizes=collections.deque(maxlen=5))  # a small bound to reach
    await b.infer_many([1, 2, 3])
    for i in range(9):
        await b.infer(i)
    assert list(b.stats.batch_sizes) == [1] * 5 and b.stats.batches == 10
    assert b.stats.max_batch_size == 3 and b.stats.mean_batch_size == 12 / 10
    assert stats_mod.BatcherStats().batch_sizes.maxlen == stats_mod.BATCH_SIZES_KEPT
    b.close()
