"""`RunRecorder.submit(here=True)`: an idle recorder lets the caller's thread write the run (its own
transaction, committed before `submit` returns); a busy one queues it as before. Flushes and close
still wait for a write in progress. Real SQLite file."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from workbench.pipeline.recorder import RunRecorder
from workbench.store import Store, TraceEvent


@pytest.fixture
def store(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    yield s
    s.close()


def _run(name: str = "p") -> dict:
    return {"pipeline_name": name, "pipeline_version": "v", "inputs": {"n": 1}, "status": "succeeded"}


EVENTS = [TraceEvent("rule_firing", "rules", {"rule": "r"}, 0.001), TraceEvent("model_call", "m", {"ok": True})]


def _writer_threads(store: Store) -> list[str]:
    seen: list[str] = []
    orig = store.record_runs

    def spy(runs, **kw):
        seen.append(threading.current_thread().name)
        return orig(runs, **kw)

    store.record_runs = spy  # type: ignore[method-assign]
    return seen


def _gated_writes(store: Store) -> tuple[threading.Event, threading.Event]:
    """Makes the store's run writes wait for `gate` (5 s at most); `entered` is set when one is waiting:
    the recorder is then busy on a write in progress."""
    orig = store.record_runs
    gate, entered = threading.Event(), threading.Event()

    def slow(runs, **kw):
        entered.set()
        gate.wait(5)
        return orig(runs, **kw)

    store.record_runs = slow  # type: ignore[method-assign]
    return gate, entered


def test_an_idle_recorder_writes_on_the_callers_thread(store):
    rec = RunRecorder(store)
    threads = _writer_threads(store)
    fut = rec.submit(_run(), EVENTS, here=True)
    assert fut.done() and threads == [threading.current_thread().name]
    got = store.get_run(fut.result())
    assert got.status == "succeeded" and [e.kind for e in got.events] == ["rule_firing", "model_call"]
    plain = rec.submit(_run(), EVENTS)  # without `here`: the recorder's thread, as before
    assert plain.result(5) and threads[-1] == "workbench-recorder"
    rec.close()


def test_a_busy_recorder_queues_the_run(store):
    rec = RunRecorder(store)
    threads = _writer_threads(store)
    gate, entered = _gated_writes(store)
    first = rec.submit(_run(), EVENTS)  # the recorder's thread is writing it
    assert entered.wait(5)
    second = rec.submit(_run(), EVENTS, here=True)
    assert not second.done()  # queued behind the write in progress, not written here
    gate.set()
    assert first.result(5) and second.result(5)
    assert threads == ["workbench-recorder"] * 2  # both written by the recorder thread
    assert store.get_run(second.result()) is not None
    rec.close()


def test_flush_and_close_wait_for_a_callers_write(store):
    rec = RunRecorder(store)
    gate, entered = _gated_writes(store)
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("f", rec.submit(_run("flushed"), EVENTS, here=True)))
    t.start()
    assert entered.wait(5)
    flushed = rec.flush_future()
    time.sleep(0.05)
    assert not flushed.done()  # the run being written on the caller's thread was submitted before
    gate.set()
    flushed.result(5)
    t.join(5)
    assert store.get_run(out["f"].result(0)) is not None
    rec.close()


def test_a_failed_write_on_the_callers_thread_is_in_the_future(store):
    rec = RunRecorder(store)
    rid = str(uuid.uuid4())
    assert rec.submit({**_run(), "id": rid}, [], here=True).result(0) == rid
    dup = rec.submit({**_run(), "id": rid}, [], here=True)  # the same id again: refused by the store
    assert dup.done() and dup.exception() is not None
    rec.close()


def test_a_run_submitted_while_the_recorder_closes_is_written_or_refused(store):
    """Regression (rev8): `close` between `submit`'s closed check and its put queued the run after
    the stop marker: never written, and its future never resolved (a durable caller waited for ever).
    Here `close` is started from inside the put and given 0.5 s to put its stop marker first."""
    rec = RunRecorder(store)
    real_put = rec._q.put
    stop_put = threading.Event()
    closer: list[threading.Thread] = []

    def put(item, *a, **kw):
        if isinstance(item, tuple) and not closer:  # the run: close now, from another thread

            def close_it():
                rec.close()

            def watch_stop(x, *a2, **kw2):
                real_put(x, *a2, **kw2)
                stop_put.set()

            rec._q.put = watch_stop  # the stop marker's put (and any later one)
            closer.append(threading.Thread(target=close_it))
            closer[0].start()
            stop_put.wait(0.5)
        return real_put(item, *a, **kw)

    rec._q.put = put  # type: ignore[method-assign]
    try:
        fut = rec.submit(_run(), EVENTS)
    except RuntimeError:  # refused as closed: nothing to wait for
        fut = None
    closer[0].join(10)
    if fut is not None:
        run_id = fut.result(5)  # written before the recorder stopped
        assert store.get_run(run_id).status == "succeeded"
    with pytest.raises(RuntimeError, match="closed"):
        rec.submit(_run(), EVENTS)
