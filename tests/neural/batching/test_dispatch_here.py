"""Held requests and `dispatch(here=True)`: a batch of one runs on the caller's thread only when the
worker would run exactly that batch next (idle, nothing else queued, no queue delay); otherwise the
worker runs it as before. Same bookkeeping either way; one batch at a time."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from neural.batching import BatcherConfig, DynamicBatcher
from neural.metrics import METRICS_REGISTRY


class Model:
    """Returns (item, thread name); notes how many batches run at once."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.batches: list[tuple[list, str]] = []
        self.running = 0
        self.most_at_once = 0
        self.entered = threading.Event()
        self.gate = gate
        self.lock = threading.Lock()

    def __call__(self, items: list, pad_to: int | None) -> list:
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(10)
        time.sleep(0.01)
        name = threading.current_thread().name
        with self.lock:
            self.batches.append((list(items), name))
            self.running -= 1
        return [(i, name) for i in items]


def make(model: Model, name: str, **cfg) -> DynamicBatcher:
    cfg.setdefault("max_queue_delay_ms", 0)
    cfg.setdefault("buckets", None)
    b = DynamicBatcher(name, model, BatcherConfig(**cfg))
    # the worker waits for work: a held request is taken by a worker that is awake anyway (a fixed 50 ms
    # sleep here was not always enough on a loaded machine)
    deadline = time.monotonic() + 30
    while not b._cond._waiters:  # CPython's Condition: the threads in its wait()
        assert time.monotonic() < deadline, "the batcher's worker never waited for work"
        time.sleep(0.001)
    return b


def _metric(name: str, model: str) -> float:
    return METRICS_REGISTRY.get_sample_value(name, {"model": model, "version": ""}) or 0.0


def test_an_idle_batcher_runs_the_held_request_on_the_callers_thread():
    model = Model()
    b = make(model, "here-idle")
    before = _metric("workbench_model_batch_size_count", "here-idle")
    req = b.submit("a", hold=True)
    time.sleep(0.05)
    assert not model.batches and b.queue_size == 1  # held: the worker was not woken for it
    assert req.dispatch(here=True)
    assert req.done() and req.result() == ("a", threading.current_thread().name)
    assert b.queue_size == 0 and b.stats.batches == 1 and b.stats.requests == 1
    assert b.batch_log[-1].size == 1 and req.batch_id == b.batch_log[-1].batch_id
    assert req.queue_time_s is not None and req.compute_time_s is not None
    assert _metric("workbench_model_batch_size_count", "here-idle") == before + 1
    b.close()


def test_a_held_request_dispatched_to_the_worker_runs_there():
    model = Model()
    b = make(model, "here-worker")
    req = b.submit("a", hold=True)
    assert not req.dispatch()
    assert req.result(5) == ("a", "batcher-here-worker")
    b.close()


def test_with_other_requests_queued_the_worker_batches_them_together_in_order():
    gate = threading.Event()
    model = Model(gate)
    b = make(model, "here-busy", max_batch_size=8)
    first = b.submit("first")  # the worker runs it and is held at the gate
    assert model.entered.wait(5)
    a = b.submit("a")
    held = b.submit("held", hold=True)
    assert not held.dispatch(here=True)  # the worker is busy and "a" is queued before it
    gate.set()
    assert held.result(5)[1] == "batcher-here-busy"
    assert first.result(5)[1] == a.result(5)[1] == "batcher-here-busy"
    assert [items for items, _ in model.batches] == [["first"], ["a", "held"]]
    b.close()


def test_a_queue_delay_means_the_worker_waits_for_a_fuller_batch():
    model = Model()
    b = make(model, "here-delay", max_queue_delay_ms=20)
    req = b.submit("a", hold=True)
    assert not req.dispatch(here=True)
    assert req.result(5)[1] == "batcher-here-delay"
    b.close()


def test_a_cancelled_held_request_never_runs():
    model = Model()
    b = make(model, "here-cancel")
    req = b.submit("a", hold=True)
    assert req.cancel()
    assert not req.dispatch(here=True)
    time.sleep(0.05)
    assert not model.batches and b.queue_size == 0 and b.stats.cancelled == 1
    b.close()


def test_the_worker_waits_while_a_callers_thread_runs_a_batch():
    gate = threading.Event()
    model = Model(gate)
    b = make(model, "here-one-at-a-time")
    req = b.submit("here", hold=True)
    ran: dict = {}
    t = threading.Thread(target=lambda: ran.setdefault("here", req.dispatch(here=True)), name="caller")
    t.start()
    assert model.entered.wait(5)
    later = b.submit("later")  # queued while the caller's batch runs: the worker must not start it yet
    time.sleep(0.05)
    assert model.most_at_once == 1 and not later.done()
    gate.set()
    t.join(5)
    assert ran["here"] and req.result(1) == ("here", "caller")
    assert later.result(5) == ("later", "batcher-here-one-at-a-time")
    assert model.most_at_once == 1
    b.close()


def test_close_after_a_callers_batch_stops_the_worker():
    model = Model()
    b = make(model, "here-close")
    req = b.submit("a", hold=True)
    assert req.dispatch(here=True)
    b.close(timeout=5)
    assert b._thread is not None and not b._thread.is_alive()


@pytest.fixture
def callers_blocked_batch():
    """A batch of one running on a caller's thread and held inside the model until `gate` is set:
    `.batcher`, `.req`, `.gate`, `.caller` (the thread). Afterwards the gate opens and the caller ends."""
    gate = threading.Event()
    model = Model(gate)
    b = make(model, "here-close-blocked")
    req = b.submit("a", hold=True)
    caller = threading.Thread(target=req.dispatch, kwargs={"here": True})
    caller.start()
    assert model.entered.wait(10)
    yield SimpleNamespace(batcher=b, req=req, gate=gate, caller=caller)
    gate.set()
    caller.join(10)
    b.close(timeout=10)


def test_close_waits_for_a_batch_running_on_a_callers_thread(callers_blocked_batch):
    # close(drain=True) returns once everything admitted has run (the entry releases its backend
    # next): a batch of one that a caller's thread is running is waited for like the worker's batch
    blocked = callers_blocked_batch
    closer = threading.Thread(target=blocked.batcher.close, kwargs={"timeout": 10})
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # still waiting for the caller's batch
    blocked.gate.set()
    closer.join(10)
    assert not closer.is_alive() and blocked.req.done() and blocked.req.result()[0] == "a"


def test_close_with_a_timeout_gives_up_on_a_callers_batch_that_does_not_end(callers_blocked_batch):
    blocked = callers_blocked_batch
    t0 = time.monotonic()
    blocked.batcher.close(timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 5 and not blocked.req.done()
    blocked.gate.set()
    blocked.caller.join(10)
    assert blocked.req.result()[0] == "a"
