"""`served_by` and idempotent recording (no Ray needed): the migration, the store, the recorder's
run identity, `runs show` / `runs list --json`."""

from __future__ import annotations

import json
import sqlite3

import pytest
from alembic import command
from typer.testing import CliRunner

from workbench.pipeline.identity import RUN_IDENTITY, RunIdentity
from workbench.store import RunRow, Store, TraceEvent, head_revision
from workbench.store.database import alembic_config


def test_migration_0003_adds_served_by_and_downgrades(tmp_path):
    path = tmp_path / "old.sqlite3"
    url = f"sqlite:///{path}"
    command.upgrade(alembic_config(url), "0002")
    con = sqlite3.connect(path)
    con.execute(
        "INSERT INTO runs (id, pipeline_name, pipeline_version, knowledge_base_versions, model_versions, inputs,"
        " status, timings, cache_hit, started_at) VALUES ('r1', 'p', 'v', '{}', '{}', '{}', 'succeeded', '{}', 0,"
        " '2026-11-30 08:00:00')"
    )
    con.commit()
    con.close()
    store = Store.open(url)
    assert store.revision() == head_revision() == "0004"
    assert store.get_run("r1").served_by is None
    store.record_run(
        {
            "id": "r2",
            "pipeline_name": "p",
            "pipeline_version": "v",
            "inputs": {},
            "status": "succeeded",
            "served_by": "node abc replica pipelines#x",
        },
        [],
    )
    assert store.get_run("r2").served_by == "node abc replica pipelines#x"
    assert [r["served_by"] for r in store.run_summaries()] == ["node abc replica pipelines#x", None]
    store.close()
    command.downgrade(alembic_config(url), "0002")
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")]
    assert "served_by" not in cols and "failed_node" in cols


def _run(run_id: str, **kw) -> dict:
    return {
        "id": run_id,
        "pipeline_name": "p",
        "pipeline_version": "v",
        "inputs": {"x": 1},
        "status": "succeeded",
        **kw,
    }


def test_record_runs_skip_existing_is_idempotent(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    store.record_runs([(_run("a", served_by="one"), [TraceEvent("node", "n", {"i": 1})])])
    with pytest.raises(Exception, match="UNIQUE"):  # the default still refuses a duplicate id
        store.record_runs([(_run("a"), [])])
    # a retry on another replica: same id, other replica; the first record stays, nothing doubles
    ids = store.record_runs(
        [(_run("a", served_by="two"), [TraceEvent("node", "n", {"i": 2})]), (_run("b"), [TraceEvent("node", "m", {})])],
        skip_existing=True,
    )
    assert ids == ["a", "b"]
    row = store.get_run("a")
    assert row.served_by == "one" and [e.payload for e in row.events] == [{"i": 1}]
    assert len(store.run_summaries(limit=10)) == 2 and len(store.get_run("b").events) == 1
    store.close()


def test_recorder_takes_the_run_identity_of_the_calling_context(tmp_path):
    """A run id chosen by the caller (the Ray ingress) and served_by reach the record through the
    workbench's worker pool (a ContextThreadPool), and the result carries the same id."""
    from workbench import Workbench
    from workbench.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(settings, durable=True) as wb:
        wb.recorder.skip_existing = True

        async def go(run_id: str, served_by: str):
            token = RUN_IDENTITY.set(RunIdentity(run_id, served_by))
            try:
                return await wb.run("demo_digits", {"images": [[0.0] * 64, [0.0] * 64]})
            finally:
                RUN_IDENTITY.reset(token)

        async def main():
            first = await go("11111111-aaaa-4bbb-8ccc-000000000001", "node n1 replica pipelines#a")
            again = await go("11111111-aaaa-4bbb-8ccc-000000000001", "node n2 replica pipelines#b")  # a retry
            other = await wb.run("demo_digits", {"images": [[0.0] * 64, [0.0] * 64]})  # no identity: own id
            return first, again, other

        first, again, other = wb._sync(main())
        assert first.run_id == again.run_id == "11111111-aaaa-4bbb-8ccc-000000000001"
        assert other.run_id != first.run_id
        runs = wb.list_runs(limit=10)
        assert sorted(r.run_id for r in runs) == sorted([first.run_id, other.run_id])
        assert wb.get_run(first.run_id).served_by == "node n1 replica pipelines#a"
        assert wb.get_run(other.run_id).served_by is None


def test_runs_show_and_list_json_show_served_by(tmp_path, monkeypatch):
    from cli.app import app

    url = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", url)
    from workbench.config import get_settings

    get_settings.cache_clear()
    store = Store.open(url)
    store.record_run(
        RunRow(
            id="run-served-1",
            pipeline_name="p",
            pipeline_version="v",
            inputs={},
            status="succeeded",
            served_by="node 0123456789ab replica pipelines#q1",
        ),
        [],
    )
    store.close()
    runner = CliRunner()
    res = runner.invoke(app, ["runs", "show", "run-served-1"])
    assert res.exit_code == 0, res.output
    assert "served by node 0123456789ab replica pipelines#q1" in res.output
    res = runner.invoke(app, ["runs", "list", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)[0]["served_by"] == "node 0123456789ab replica pipelines#q1"


def test_a_pipeline_version_stored_by_another_replica_between_check_and_insert_is_not_an_error(tmp_path, monkeypatch):
    """Two replicas on one database registering a pipeline on their first requests at once: the second's
    existence check ran before the first committed, so its insert breaks the unique (name, version); that is
    "already stored", not a 500 (seen as `internal error (IntegrityError)` in tests/scale's kill test)."""
    from sqlalchemy.orm import Session

    url = f"sqlite:///{tmp_path / 'runs.sqlite3'}"
    first, second = Store.open(url), Store.open(url)
    assert first.save_pipeline("demo_digits", "v1", "name: demo_digits") is True
    real, calls = Session.scalar, []

    def check_before_the_other_commit(self, *args, **kwargs):
        calls.append(1)
        return None if len(calls) == 1 else real(self, *args, **kwargs)

    monkeypatch.setattr(Session, "scalar", check_before_the_other_commit)
    assert second.save_pipeline("demo_digits", "v1", "name: demo_digits") is False
    monkeypatch.undo()
    assert [r.version for r in second.pipeline_versions("demo_digits")] == ["v1"]
    first.close()
    second.close()
