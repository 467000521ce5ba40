"""Fixtures shared by the store tests on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.exc import IntegrityError

from workbench.pipeline.recorder import RunRecorder
from workbench.store import RunRow, Store, TraceEvent


def run_writing_checks(store: Store) -> None:
    """The one run-writing path (`Store.record_runs`) as production (the pipeline's `RunRecorder`,
    group commit) and scripts (`Store.record_run`) use it: rows and dicts, traces in order, a whole
    group in one transaction, a duplicate id refused whole, the recorder isolating the bad run."""
    p, q = f"p-{uuid.uuid4()}", f"q-{uuid.uuid4()}"  # the database may be shared with other tests
    ev = [TraceEvent("rule_firing", "rules", {"rule": "r", "facts": [1]}, 0.001), TraceEvent("model_call", "m", {})]
    row = RunRow(pipeline_name=p, pipeline_version="v", inputs={"a": [1, 2]}, outputs={"b": "x"}, status="succeeded")
    one = store.record_run(row, ev)
    assert row.id == one
    got = store.get_run(one)
    assert got.inputs == {"a": [1, 2]} and [(e.seq, e.kind) for e in got.events] == [
        (0, "rule_firing"),
        (1, "model_call"),
    ]
    assert got.timings == {} and got.cache_hit is False and got.started_at is not None

    ids = store.record_runs(
        [
            ({"pipeline_name": p, "pipeline_version": "v", "inputs": {"i": i}, "status": "succeeded"}, ev[:i])
            for i in range(3)
        ]
    )
    assert [len(store.get_run(i).events) for i in ids] == [0, 1, 2]
    with pytest.raises(IntegrityError):  # one bad run in a group: nothing of the group is written
        store.record_runs(
            [
                ({"pipeline_name": p, "pipeline_version": "v", "inputs": {}, "status": "ok"}, ev),
                ({"id": one, "pipeline_name": p, "pipeline_version": "v", "inputs": {}, "status": "ok"}, ev),
            ]
        )
    assert len(store.list_runs(pipeline=p, limit=100)) == 4
    with pytest.raises(ValueError, match="unknown run column"):
        store.record_runs([({"pipeline": "p"}, [])])

    recorder = RunRecorder(store)
    try:
        good = [
            recorder.submit(
                {"pipeline_name": q, "pipeline_version": "v", "inputs": {"n": n}, "status": "succeeded"}, ev
            )
            for n in range(5)
        ]
        dup = recorder.submit({"id": one, "pipeline_name": q, "pipeline_version": "v", "inputs": {}, "status": "x"}, ev)
        recorder.flush()
        assert all(store.get_run(f.result()).pipeline_name == q for f in good)
        with pytest.raises(IntegrityError):
            dup.result()
    finally:
        recorder.close()
    assert len(store.list_runs(pipeline=q, limit=100)) == 5


@pytest.fixture
def check_run_writing():
    return run_writing_checks
