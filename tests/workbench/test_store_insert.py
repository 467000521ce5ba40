"""The store's precompiled SQLite insert (`Store._insert`) stores exactly what SQLAlchemy's Core insert
stores: the raw rows of two real SQLite files, one written each way, are compared value by value."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from workbench.store import Store, TraceEvent
from workbench.store.models import RunRow, TraceEventRow
from workbench.store.store import run_columns

RUNS = [
    (
        {
            "id": "run-1",
            "pipeline_name": "p",
            "pipeline_version": "v1",
            "knowledge_base_versions": {"kb": "abc"},
            "model_versions": {},
            "inputs": {"images": [[0.0, 16.0, 1.5]], "id": "ünïcode", "nan": float("nan")},
            "input_hash": "h",
            "outputs": None,
            "explanation": {"summary": ["a", "b"], "nested": {"x": [1, 2.5, None, True]}},
            "status": "failed",
            "error": "node x failed",
            "timings": {"total": 0.001234},
            "skipped": None,
            "failed_node": "x",
            "cache_hit": True,
            "started_at": datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC),
            "duration": 0.5,
            "served_by": "replica a",
        },
        [TraceEvent("rule_firing", "rules", {"rule": "r", "facts": [1, 2]}, 0.001), TraceEvent("node", None, {}, None)],
    ),
    (
        {
            "id": "run-2",
            "pipeline_name": "p",
            "pipeline_version": "v1",
            "inputs": {},
            "status": "succeeded",
            "started_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        },
        [],
    ),
]


def _raw(path) -> tuple[list[tuple], list[tuple]]:
    with sqlite3.connect(path) as con:
        runs = con.execute("SELECT * FROM runs ORDER BY id").fetchall()
        events = con.execute(
            "SELECT run_id, seq, kind, node, payload, at FROM trace_events ORDER BY run_id, seq"
        ).fetchall()
    return runs, events


def test_the_precompiled_insert_stores_what_the_core_insert_stores(tmp_path):
    fast = Store.open(f"sqlite:///{tmp_path / 'fast.sqlite3'}")
    core = Store.open(f"sqlite:///{tmp_path / 'core.sqlite3'}")
    fast.record_runs([(dict(r), evs) for r, evs in RUNS])
    rows = [run_columns(dict(r)) for r, _ in RUNS]
    events = [
        {"run_id": row["id"], "seq": i, "kind": e.kind, "node": e.node, "payload": e.payload, "at": e.at}
        for row, (_, evs) in zip(rows, RUNS)
        for i, e in enumerate(evs)
    ]
    with core.engine.begin() as conn:  # the Core insert, as record_runs did it
        conn.execute(insert(RunRow.__table__), rows[:1])
        conn.execute(insert(RunRow.__table__), rows[1:])
        conn.execute(insert(TraceEventRow.__table__), events)
    runs_fast, events_fast = _raw(tmp_path / "fast.sqlite3")
    runs_core, events_core = _raw(tmp_path / "core.sqlite3")
    assert len(runs_fast) == 2 and len(events_fast) == 2
    assert [tuple(map(repr, r)) for r in runs_fast] == [tuple(map(repr, r)) for r in runs_core]  # nan included
    assert events_fast == events_core
    got = fast.get_run("run-1")
    assert (
        got.outputs is None and got.cache_hit is True and got.started_at.replace(tzinfo=UTC) == RUNS[0][0]["started_at"]
    )
    assert [e.payload for e in got.events] == [{"rule": "r", "facts": [1, 2]}, {}]
    fast.close()
    core.close()


def test_a_duplicate_id_is_refused_whole_with_sqlalchemys_error(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    store.record_runs([({"id": "a", "pipeline_name": "p", "pipeline_version": "v", "inputs": {}, "status": "s"}, [])])
    with pytest.raises(IntegrityError):
        store.record_runs(
            [
                ({"id": "b", "pipeline_name": "p", "pipeline_version": "v", "inputs": {}, "status": "s"}, []),
                ({"id": "a", "pipeline_name": "p", "pipeline_version": "v", "inputs": {}, "status": "s"}, []),
            ]
        )
    assert store.get_run("b") is None  # nothing of the refused group is written
    store.close()


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"started_at": "2026-12-01"}, "(builtins.TypeError) SQLite DateTime type only accepts"),
        ({"duration": "abc"}, "(builtins.ValueError) could not convert string to float"),
        ({"outputs": {"v": object()}}, "(builtins.TypeError) Object of type object is not JSON serializable"),
    ],
)
def test_a_value_its_column_cannot_take_fails_as_the_core_insert_does(tmp_path, bad, message):
    # a value the column type's bind processor refuses is a StatementError (a SQLAlchemyError, as
    # `record_runs` documents and the Core insert raises), not the processor's bare TypeError/ValueError;
    # nothing of the runs is written
    from sqlalchemy.exc import StatementError

    store = Store.open(f"sqlite:///{tmp_path / 'bad.sqlite3'}")
    try:
        good = {**RUNS[0][0], "id": "good"}
        with pytest.raises(StatementError) as err:
            store.record_runs([(good, RUNS[0][1]), ({**RUNS[0][0], "id": "bad", **bad}, [])])
        assert str(err.value).startswith(message)
        assert store.get_run("good") is None
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM trace_events").scalar() == 0
    finally:
        store.close()


def test_idempotent_recording_stores_what_the_core_on_conflict_insert_stores(tmp_path):
    """`skip_existing=True` (runs recorded by Ray replicas under the ingress's run id) goes through the
    precompiled `INSERT ... ON CONFLICT DO NOTHING`: the same raw rows as SQLAlchemy's dialect insert, and a run
    recorded again (a retried request) leaves the stored run and its trace events as they were."""
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    fast = Store.open(f"sqlite:///{tmp_path / 'fast.sqlite3'}")
    core = Store.open(f"sqlite:///{tmp_path / 'core.sqlite3'}")
    assert fast.record_runs([(dict(r), evs) for r, evs in RUNS], skip_existing=True) == ["run-1", "run-2"]
    again = {**RUNS[0][0], "status": "succeeded", "error": None}
    assert fast.record_runs([(again, [TraceEvent("other", None, {}, None)])], skip_existing=True) == ["run-1"]
    rows = [run_columns(dict(r)) for r, _ in RUNS]
    events = [
        {"run_id": row["id"], "seq": i, "kind": e.kind, "node": e.node, "payload": e.payload, "at": e.at}
        for row, (_, evs) in zip(rows, RUNS)
        for i, e in enumerate(evs)
    ]
    with core.engine.begin() as conn:
        conn.execute(sqlite_insert(RunRow.__table__).on_conflict_do_nothing(index_elements=["id"]), rows)
        conn.execute(
            sqlite_insert(TraceEventRow.__table__).on_conflict_do_nothing(index_elements=["run_id", "seq"]), events
        )
    runs_fast, events_fast = _raw(tmp_path / "fast.sqlite3")
    runs_core, events_core = _raw(tmp_path / "core.sqlite3")
    assert [tuple(map(repr, r)) for r in runs_fast] == [tuple(map(repr, r)) for r in runs_core]
    assert events_fast == events_core and [e[2] for e in events_fast] == ["rule_firing", "node"]
    fast.close()
    core.close()


@pytest.mark.parametrize("skip_existing", [False, True])
def test_values_are_bound_before_the_write_transaction_starts(tmp_path, skip_existing):
    """The columns' JSON is written before SQLite's write lock is taken: while a trace payload is serialised,
    another connection (another process's, in a Ray deployment) can still write to the file at once. Before,
    the trace events were bound after the run row's insert had taken the lock: that write got "database is
    locked", and a replica waiting for the lock waited for the other's serialisation too."""
    path = tmp_path / "runs.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    other_writes: list[str] = []

    def payload():
        with sqlite3.connect(path, timeout=0) as con:  # no waiting: fails if a write transaction is open
            try:
                con.execute("INSERT INTO pipelines_probe VALUES (1)")
                other_writes.append("written")
            except sqlite3.OperationalError as exc:
                other_writes.append(str(exc))
        yield 1

    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE pipelines_probe (x INTEGER)")
    run = {"id": "r", "pipeline_name": "p", "pipeline_version": "v", "inputs": {}, "status": "s"}
    store.record_runs([(run, [TraceEvent("node", "n", {"values": payload()}, None)])], skip_existing=skip_existing)
    assert other_writes == ["written"]
    assert store.get_run("r").events[0].payload == {"values": [1]}
    store.close()
