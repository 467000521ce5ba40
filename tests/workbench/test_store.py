"""The run store: migrations on a fresh SQLite file, run+trace round trip, atomic writes."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import event, inspect
from sqlalchemy.exc import IntegrityError

from workbench.store import RunRow, Store, StoreError, TraceEvent, head_revision


def test_migrations_create_schema_on_fresh_file(tmp_path):
    path = tmp_path / "fresh.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    assert path.exists()
    assert store.revision() == head_revision()
    tables = set(inspect(store.engine).get_table_names())
    assert {
        "knowledge_bases",
        "models",
        "pipelines",
        "pipeline_stages",
        "runs",
        "trace_events",
        "alembic_version",
    } <= tables
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    # opening again is a no-op migration
    assert Store.open(f"sqlite:///{path}").revision() == head_revision()


@pytest.mark.parametrize("round_", range(3))
def test_threads_creating_one_new_sqlite_file_at_once_all_open_it(tmp_path, round_, check_concurrent_creation):
    check_concurrent_creation(f"sqlite:///{tmp_path / 'new.sqlite3'}")


def _open_with_others(url: str, barrier, answers) -> None:  # a spawned process: module level
    barrier.wait()
    try:
        answers.put(Store.open(url).revision())
    except Exception as exc:  # noqa: BLE001 - the answer names it
        answers.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_one_new_sqlite_file_at_once_all_open_it(tmp_path):
    """Regression (stop 31's CI): Ray Serve replicas of `serve --ray` (each its own process) opened a new
    SQLite file at once; one created the schema and the others' start-up failed with "table knowledge_bases
    already exists" (sqlalchemy.exc.OperationalError), so `serve --ray` named the wrong reason."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    url = f"sqlite:///{tmp_path / 'new.sqlite3'}"
    barrier, answers = ctx.Barrier(3, timeout=300), ctx.Queue()
    procs = [ctx.Process(target=_open_with_others, args=(url, barrier, answers)) for _ in range(3)]
    for proc in procs:
        proc.start()
    got = [answers.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join(60)
    assert got == [head_revision()] * 3


def _run(**kw) -> RunRow:
    base = dict(
        pipeline_name="p",
        pipeline_version="v1",
        knowledge_base_versions={"kb": "abc"},
        model_versions={"m": "def"},
        inputs={"x": 1},
        outputs={"y": 2},
        status="succeeded",
        timings={"model": 0.01},
    )
    base.update(kw)
    return RunRow(**base)


def test_run_with_trace_round_trips(db_url):
    store = Store.open(db_url)
    events = [
        TraceEvent("model_call", "clf", {"model": "m", "version": "def", "batch_size": 4, "latency": 0.002}, 0.001),
        TraceEvent("rule_firing", "post", {"rule": "r1", "facts": [1, 2]}, 0.003),
        TraceEvent("gate_decision", "gate", {"open": False}, 0.004),
    ]
    run_id = store.record_run(_run(), events)
    got = store.get_run(run_id)
    assert got is not None and got.outputs == {"y": 2} and got.model_versions == {"m": "def"}
    assert [(e.seq, e.kind, e.node, e.payload) for e in got.events] == [
        (i, e.kind, e.node, e.payload) for i, e in enumerate(events)
    ]
    assert store.get_run(run_id[:8]).id == run_id
    assert [r.id for r in store.list_runs(pipeline="p")] == [run_id]
    assert store.list_runs(pipeline="other") == []


def test_failure_during_write_leaves_no_partial_run(db_url):
    store = Store.open(db_url)

    @event.listens_for(store.engine, "before_cursor_execute")
    def _fail_on_trace(conn, cursor, statement, params, context, executemany):
        if statement.startswith("INSERT INTO trace_events"):
            raise sqlite3.OperationalError("disk I/O error (injected)")

    with pytest.raises(Exception, match="injected"):
        store.record_run(_run(), [TraceEvent("rule_firing", "n", {"rule": "r"})])
    event.remove(store.engine, "before_cursor_execute", _fail_on_trace)
    assert store.list_runs() == []
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM trace_events").scalar() == 0


def test_duplicate_run_id_is_rejected_whole(db_url):
    store = Store.open(db_url)
    run_id = store.record_run(_run(), [TraceEvent("node", "a")])
    with pytest.raises(IntegrityError):
        store.record_run(_run(id=run_id, outputs={"y": 3}), [TraceEvent("node", "b")])
    assert store.get_run(run_id).outputs == {"y": 2}
    assert [e.node for e in store.get_run(run_id).events] == ["a"]


def test_pipeline_versions_and_stages(db_url):
    store = Store.open(db_url)
    assert store.save_pipeline("p", "aaa111", "doc1") is True
    assert store.save_pipeline("p", "aaa111", "doc1") is False
    store.save_pipeline("p", "bbb222", "doc2")
    assert store.get_pipeline("p").version == "bbb222"  # newest without a production label
    store.set_stage("p", "aaa", "production")
    assert store.get_pipeline("p").version == "aaa111"
    assert store.get_pipeline("p", "bbb").document == "doc2"
    with pytest.raises(StoreError, match="stage 'prod'"):
        store.set_stage("p", "aaa111", "prod")
    with pytest.raises(StoreError, match="no version"):
        store.set_stage("p", "zzz", "staging")


def test_database_from_newer_code_is_refused(db_url):
    store = Store.open(db_url)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num='9999_future'")
    with pytest.raises(StoreError, match="9999_future.*newer"):
        Store.open(db_url)


def test_unreadable_database_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "garbage.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="garbage.sqlite3"):
        Store.open(f"sqlite:///{bad}")


def test_migration_0002_moves_hidden_timing_keys_to_columns(tmp_path):
    """Runs written at revision 0001 kept `_skipped`, `_failed_node` and `_cached_from` inside the
    timings JSON; upgrading moves them to their columns (and RunResult reads the columns)."""
    import json

    from alembic import command

    from workbench.pipeline.result import RunResult
    from workbench.store.database import alembic_config

    path = tmp_path / "old.sqlite3"
    url = f"sqlite:///{path}"
    command.upgrade(alembic_config(url), "0001")
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO runs (id, pipeline_name, pipeline_version, knowledge_base_versions, model_versions, inputs,"
        " status, timings, cache_hit, started_at) VALUES (?, 'p', 'v', '{}', '{}', '{}', 'failed', ?, 0,"
        " '2026-11-30 08:00:00')",
        ("r1", json.dumps({"a": 0.5, "total": 1.0, "_skipped": ["m"], "_failed_node": "rules", "_cached_from": "r0"})),
    )
    con.commit()
    con.close()
    store = Store.open(url)
    assert store.revision() == head_revision() == "0004"
    row = store.get_run("r1")
    assert row.timings == {"a": 0.5, "total": 1.0}
    assert (row.skipped, row.failed_node, row.cached_from) == (["m"], "rules", "r0")
    r = RunResult.from_row(row)
    assert (r.skipped, r.failed_node, r.cached_from, r.timings) == (["m"], "rules", "r0", {"a": 0.5, "total": 1.0})
    assert store.run_summaries()[0]["failed_node"] == "rules"  # the summaries read the column too
    store.close()
    command.downgrade(alembic_config(url), "0001")
    back = sqlite3.connect(path).execute("SELECT timings FROM runs WHERE id = 'r1'").fetchone()[0]
    assert json.loads(back) == {
        "a": 0.5,
        "total": 1.0,
        "_skipped": ["m"],
        "_failed_node": "rules",
        "_cached_from": "r0",
    }


def test_one_run_writing_path_on_sqlite(db_url, check_run_writing):
    store = Store.open(db_url)
    check_run_writing(store)
    store.close()


def test_run_summaries_name_the_failed_node_of_a_run_written_now(db_url):
    """`run_summaries` (GET /v1/runs, which the TUI lists over HTTP) reads `failed_node` from its column: it
    used to look for the `_failed_node` key that migration 0002 moved out of `timings`, so every
    failed run written since showed `failed_node: null` there while `runs show` named the node."""
    store = Store.open(db_url)
    run = {"id": "f1", "pipeline_name": "p", "pipeline_version": "v", "inputs": {}, "status": "failed"}
    store.record_run({**run, "error": "boom", "failed_node": "rules", "timings": {"total": 0.1}}, [])
    store.record_run({**run, "id": "s1", "status": "succeeded", "timings": {"_failed_node": "not a column"}}, [])
    got = {r["run_id"]: r["failed_node"] for r in store.run_summaries()}
    assert got == {"f1": "rules", "s1": None} and store.get_run("f1").failed_node == "rules"


def test_the_same_version_saved_by_two_threads_at_once_is_stored_once_on_sqlite(db_url, check_concurrent_saves):
    """Two threads of one process on one store, then two stores (two processes) on one SQLite file."""
    shared = Store.open(db_url)
    check_concurrent_saves([shared, shared])
    other = Store.open(db_url)
    check_concurrent_saves([shared, other])
    shared.close()
    other.close()


def test_non_finite_floats_are_stored_as_standard_json_on_sqlite(db_url, check_non_finite):
    store = Store.open(db_url)
    check_non_finite(store)
    store.close()


def test_migration_0004_drops_the_run_id_index_the_unique_index_covers(tmp_path):
    """A run's events are found through the unique (run_id, seq) index alone; the second index on
    run_id was only ever written (issue 14, fifth round). Downgrading restores it."""
    from alembic import command

    from workbench.store.database import alembic_config

    path = tmp_path / "s.sqlite3"
    url = f"sqlite:///{path}"
    Store.open(url).close()
    con = sqlite3.connect(path)
    names = {row[1] for row in con.execute("PRAGMA index_list(trace_events)")}
    assert "ix_trace_events_run_id" not in names
    plan = " ".join(str(r) for r in con.execute("EXPLAIN QUERY PLAN SELECT * FROM trace_events WHERE run_id = 'r'"))
    assert "SEARCH trace_events USING INDEX" in plan and "(run_id=?)" in plan, plan  # the unique index
    con.close()
    command.downgrade(alembic_config(url), "0003")
    con = sqlite3.connect(path)
    assert "ix_trace_events_run_id" in {row[1] for row in con.execute("PRAGMA index_list(trace_events)")}
    con.close()
