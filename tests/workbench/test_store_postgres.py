"""The store on PostgreSQL: a throw-away server started from the machine's PostgreSQL binaries.

Skipped (with the reason) where no PostgreSQL server binaries are installed.
"""

from __future__ import annotations

import pytest
from postgres_server import throwaway_postgres

from workbench.store import RunRow, Store, TraceEvent, head_revision


@pytest.fixture(scope="module")
def postgres_url():
    with throwaway_postgres("workbench-pg-") as url:
        yield url


def test_postgres_migrates_and_round_trips(postgres_url):
    store = Store.open(postgres_url)
    assert store.revision() == head_revision()
    run_id = store.record_run(
        RunRow(pipeline_name="p", pipeline_version="v", inputs={"a": [1, 2]}, outputs={"b": "x"}, status="succeeded"),
        [
            TraceEvent("rule_firing", "rules", {"rule": "r", "facts": [1]}),
            TraceEvent("model_call", "m", {"batch_size": 3}),
        ],
    )
    got = store.get_run(run_id)
    assert got.inputs == {"a": [1, 2]} and [e.kind for e in got.events] == ["rule_firing", "model_call"]
    store.close()


def test_postgres_threads_creating_a_new_database_at_once_all_open_it(postgres_url, check_concurrent_creation):
    from sqlalchemy import create_engine, make_url, text

    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE new_schema_race"))
    admin.dispose()
    url = make_url(postgres_url).set(database="new_schema_race").render_as_string(hide_password=False)
    check_concurrent_creation(url)


def test_postgres_one_run_writing_path(postgres_url, check_run_writing):
    store = Store.open(postgres_url)
    check_run_writing(store)
    store.close()


def test_postgres_the_same_version_saved_by_two_replicas_at_once_is_stored_once(postgres_url, check_concurrent_saves):
    stores = [Store.open(postgres_url), Store.open(postgres_url)]
    check_concurrent_saves(stores)
    for store in stores:
        store.close()


def test_postgres_stores_non_finite_floats_as_standard_json(postgres_url, check_non_finite):
    """PostgreSQL's JSON type refuses the `NaN` literal: the run was lost (the commit failed) before."""
    store = Store.open(postgres_url)
    check_non_finite(store)
    store.close()
