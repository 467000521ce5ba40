"""The store on PostgreSQL: a throw-away server started from the machine's PostgreSQL binaries.

Skipped (with the reason) where no PostgreSQL server binaries are installed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from workbench.store import RunRow, Store, TraceEvent, head_revision


def _find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    initdb, pg_ctl = _find_bin("initdb"), _find_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    pytest.importorskip("psycopg")
    # not under pytest's tmp dir: its parents are private to root, and postgres runs as another user
    base = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    data = base / "data"
    prefix: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as the postgres user
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
        os.chmod(base, 0o777)
    port = _free_port()
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "wb", "--auth=trust", "-E", "UTF8"], check=True, capture_output=True
    )
    log = base / "log.txt"
    if prefix:
        log.touch()
        shutil.chown(log, "postgres")
    subprocess.run(
        [
            *prefix,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(log),
            "-w",
            "-o",
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        url = f"postgresql+psycopg://wb@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                Store.open(url).close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield url
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


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


def test_postgres_one_run_writing_path(postgres_url, check_run_writing):
    store = Store.open(postgres_url)
    check_run_writing(store)
    store.close()
