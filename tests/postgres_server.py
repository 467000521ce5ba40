"""A throw-away PostgreSQL server started from the machine's binaries, for tests that need a server
store (tests/workbench/test_store_postgres.py, tests/scale/conftest.py). Skips, with the reason, where
the server binaries, psycopg or (as root) `runuser` are missing.

The server listens on a Unix socket in its own temporary folder only, no TCP port: a port found free
and passed to `pg_ctl` could be taken by another process during `initdb` (seconds) before the server
binds it, and two servers can never meet in one folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def find_bin(name: str) -> str | None:
    """`name` on PATH, else the newest /usr/lib/postgresql/*/bin/`name`; None when neither exists."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (Ray's and HAProxy's ports in tests/scale; it can be taken
    again before its user binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def throwaway_postgres(prefix: str, *, max_connections: int | None = None) -> Iterator[str]:
    """Start a PostgreSQL server in a new temporary folder named `prefix...`, wait until the store opens
    on it (migrated), yield its SQLAlchemy URL, then stop it and delete the folder."""
    from workbench.store import Store

    initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    pytest.importorskip("psycopg")
    # not under pytest's tmp dir: its parents are private to root, and postgres runs as another user
    base = Path(tempfile.mkdtemp(prefix=prefix))
    data = base / "data"
    runas: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as the postgres user
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start postgres")
        runas = ["runuser", "-u", "postgres", "--"]
        os.chmod(base, 0o777)
    subprocess.run(
        [*runas, initdb, "-D", str(data), "-U", "wb", "--auth=trust", "-E", "UTF8"], check=True, capture_output=True
    )
    log = base / "log.txt"
    if runas:
        log.touch()
        shutil.chown(log, "postgres")
    opts = f"-k {base} -c listen_addresses=''"  # the Unix socket {base}/.s.PGSQL.5432 only
    if max_connections is not None:
        opts += f" -c max_connections={max_connections}"
    subprocess.run(
        [*runas, pg_ctl, "-D", str(data), "-l", str(log), "-w", "-o", opts, "start"], check=True, capture_output=True
    )
    try:
        url = f"postgresql+psycopg://wb@/postgres?host={base}"
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
        subprocess.run([*runas, pg_ctl, "-D", str(data), "-m", "fast", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)
