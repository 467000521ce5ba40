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


def concurrent_save_checks(stores: list[Store]) -> None:
    """Two callers (threads, each with its store: two Ray replicas on one database, or two threads of one
    process) store the same knowledge base, model and pipeline version at the same moment: both check that
    the version is missing before either inserts (a barrier at the INSERT), then both insert. One stores
    it, the other is told "already stored" (False), never an IntegrityError."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from sqlalchemy import event

    name = f"kb_{uuid.uuid4().hex[:8]}"  # the database may be shared with other tests
    saves = {
        "knowledge_bases": lambda st: st.save_knowledge_base(name, "v1", [("kb.clp", "(defrule r =>)")]),
        "models": lambda st: st.save_model(name, "v1", "onnx", "classification", {"inputs": []}),
        "pipelines": lambda st: st.save_pipeline(name, "v1", f"name: {name}"),
    }
    for table, save in saves.items():
        barrier = threading.Barrier(len(stores), timeout=20)

        def insert_together(conn, cursor, statement, params, context, executemany, table=table, barrier=barrier):
            if statement.lstrip().upper().startswith(f"INSERT INTO {table.upper()} "):
                barrier.wait()  # every caller has found the version missing

        engines = {id(st.engine): st.engine for st in stores}.values()
        for engine in engines:
            event.listen(engine, "before_cursor_execute", insert_together)
        try:
            with ThreadPoolExecutor(len(stores)) as pool:
                outcomes = list(pool.map(save, stores))
        finally:
            for engine in engines:
                event.remove(engine, "before_cursor_execute", insert_together)
        assert sorted(outcomes) == [False] * (len(stores) - 1) + [True], (table, outcomes)
    assert stores[0].get_knowledge_base(name, "v1").sources == [["kb.clp", "(defrule r =>)"]]
    assert [m.version for m in stores[0].list_models() if m.name == name] == ["v1"]
    assert [p.version for p in stores[0].pipeline_versions(name)] == ["v1"]


def concurrent_creation_checks(url: str, openers: int = 4) -> None:
    """`openers` threads open the store at `url`, a database without schema, at the same moment (as the
    workers of `serve --workers N` or Ray Serve replicas do on a new database): every one opens it, at the
    newest revision. Before, each read "no revision", then all but one failed ("table ... already exists",
    or a KeyError from Alembic's shared context)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from workbench.store import head_revision

    barrier = threading.Barrier(openers, timeout=60)

    def open_together(_: int) -> str | None:
        barrier.wait()
        store = Store.open(url)
        try:
            return store.revision()
        finally:
            store.close()

    with ThreadPoolExecutor(openers) as pool:
        assert list(pool.map(open_together, range(openers))) == [head_revision()] * openers


@pytest.fixture
def check_concurrent_creation():
    return concurrent_creation_checks


def non_finite_checks(store: Store) -> None:
    """A run whose model output and rule values are not finite floats is recorded as standard JSON: NaN,
    Infinity and -Infinity become the strings "NaN", "Infinity" and "-Infinity" (protobuf's JSON mapping),
    in the run's columns and in its trace, read back as those strings."""
    import json

    from sqlalchemy import text

    nan, inf = float("nan"), float("inf")
    row = RunRow(
        pipeline_name=f"nan-{uuid.uuid4()}",
        pipeline_version="v",
        inputs={"x": 1},
        outputs={"score": nan, "bounds": [inf, -inf], "ok": 0.5},
        explanation={"facts": [{"template": "t", "slots": {"v": nan}}]},
        status="succeeded",
    )
    rid = store.record_run(row, [TraceEvent("model_call", "m", {"outputs": {"score": nan}})])
    got = store.get_run(rid)
    assert got.outputs == {"score": "NaN", "bounds": ["Infinity", "-Infinity"], "ok": 0.5}
    assert got.explanation == {"facts": [{"template": "t", "slots": {"v": "NaN"}}]}
    assert got.events[0].payload == {"outputs": {"score": "NaN"}}

    def strict(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant} stored")

    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT CAST(outputs AS TEXT) FROM runs WHERE id = :id"), {"id": rid}).scalar()
    assert json.loads(stored, parse_constant=strict) == got.outputs


@pytest.fixture
def check_non_finite():
    return non_finite_checks


@pytest.fixture
def check_concurrent_saves():
    return concurrent_save_checks
