"""Writers of one SQLite file queue for it (`SQLiteWriteQueue`): a run is written only while its process holds the
file's write queue, other processes' writers wait for it in the kernel (not in SQLite's sleep-and-retry busy
handler), two processes recording at once each store every run once, and without a lock file the store still
records."""

from __future__ import annotations

import subprocess
import sys
import threading
from multiprocessing import get_context

from workbench.store import Store
from workbench.store.database import SQLiteWriteQueue, sqlite_write_queue


def _run(run_id: str) -> dict:
    return {"id": run_id, "pipeline_name": "p", "pipeline_version": "v", "inputs": {"n": run_id}, "status": "s"}


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
fcntl.flock(fd, fcntl.LOCK_UN)
"""


def test_a_run_is_written_only_when_the_other_process_releases_the_queue(tmp_path):
    db = tmp_path / "runs.sqlite3"
    store = Store.open(f"sqlite:///{db}")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, f"{db}-wlock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        writer = threading.Thread(target=store.record_runs, args=([(_run("queued"), [])],))
        writer.start()
        writer.join(0.5)
        assert writer.is_alive() and store.get_run("queued") is None  # waiting in the queue, nothing written
        holder.stdin.write("go\n")
        holder.stdin.flush()
        writer.join(30)
        assert not writer.is_alive() and store.get_run("queued").status == "s"
    finally:
        holder.kill()
        holder.wait()
        store.close()


def _record(url: str, tag: str, n: int) -> None:
    store = Store.open(url)
    try:
        for i in range(n):
            store.record_runs([(_run(f"{tag}-{i}"), [])], skip_existing=True)
    finally:
        store.close()


def test_two_processes_recording_at_once_store_every_run_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    Store.open(url).close()
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_record, args=(url, tag, 150)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM runs")]
    finally:
        store.close()
    assert sorted(ids) == sorted(f"{t}-{i}" for t in ("a", "b") for i in range(150))


def test_without_a_lock_file_the_store_still_records(tmp_path):
    db = tmp_path / "runs.sqlite3"
    (tmp_path / "runs.sqlite3-wlock").mkdir()  # cannot be opened as the lock file
    store = Store.open(f"sqlite:///{db}")
    try:
        store.record_runs([(_run("r"), [])])
        assert store.get_run("r") is not None
    finally:
        store.close()


def test_only_sqlite_files_have_a_queue(tmp_path):
    from sqlalchemy import create_engine

    assert isinstance(sqlite_write_queue(create_engine(f"sqlite:///{tmp_path / 'x.sqlite3'}")), SQLiteWriteQueue)
    assert sqlite_write_queue(create_engine("sqlite://")) is None
    assert sqlite_write_queue(create_engine("postgresql+psycopg://u@127.0.0.1:1/db")) is None
