"""Engine creation and Alembic migrations for the run store.

The schema is created and upgraded by Alembic on first use (`Store.open`). A database whose
revision this code does not know (written by a newer Workbench) is refused, never touched.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pydantic_core
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, OperationalError

from rules.facts import finite_json

try:
    import fcntl
except ImportError:  # Windows: no flock; the write queue is then a thread lock only
    fcntl = None  # type: ignore[assignment]

MIGRATIONS = Path(__file__).parent / "migrations"
log = logging.getLogger(__name__)


class StoreError(Exception):
    """The database cannot be used; the message names the URL or file and the reason."""


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str:
    """The newest migration revision this code knows."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def json_text(value: Any) -> str:
    """The text stored in JSON columns (runs: inputs, outputs, explanation, timings; trace
    payloads): pydantic-core's serializer (Rust), about 3x faster than `json.dumps` on a
    `demo_digits` run record (measured: 86 vs 266 µs for 43 kB), which the recorder thread pays for
    every run. Standard JSON (compact separators) that every database's JSON type takes: a float
    that is not finite (a model's NaN score, a rule's `(/ 0.0 0.0)`) is written as the string
    `"NaN"`, `"Infinity"` or `"-Infinity"` (protobuf's JSON mapping, `rules.facts.NON_FINITE_JSON`),
    not as the `NaN` literal PostgreSQL refuses; read back it is that string. A value pydantic-core
    cannot serialise goes to `json.dumps` (non-finite floats mapped the same way, by
    `rules.facts.finite_json`), which raises as before. Difference: a few Python types `json.dumps`
    refuses (bytes, sets, datetimes, dataclasses) are written instead of
    failing the commit."""
    try:
        text = pydantic_core.to_json(value, inf_nan_mode="strings").decode()
    except (pydantic_core.PydanticSerializationError, ValueError):
        return json.dumps(finite_json(value), allow_nan=False)
    if isinstance(value, dict) and len(text) >= _RECENT_MIN_CHARS:
        with _RECENT_LOCK:  # bounded, oldest first out: the texts just written stay for their answer
            _RECENT.pop(id(value), None)
            while len(_RECENT) >= _RECENT_MAX:
                del _RECENT[next(iter(_RECENT))]
            _RECENT[id(value)] = (value, text)
    return text


# The last big JSON objects `json_text` wrote (a run's input and explanation), by identity: the predict
# answer carries the same objects right after their commit and reuses the text (`recent_json_text`).
# Entries hold their object, so an id is not reused while its entry lives.
_RECENT: dict[int, tuple[Any, str]] = {}
_RECENT_MAX = 256  # two per run: room for every run of a full batch of 64 between its commit and its answer, twice
_RECENT_MIN_CHARS = 1024
_RECENT_LOCK = threading.Lock()  # writers only (recorder threads); a reader's `dict.get` is atomic


def recent_json_text(value: Any) -> str | None:
    """The text `json_text` wrote for this very object (identity, not equality) when it is among the
    last it wrote, else None. Only for objects nobody changes after they were written (a recorded
    run's input and explanation): a change after the write is not seen. Thread-safe."""
    entry = _RECENT.get(id(value))
    return entry[1] if entry is not None and entry[0] is value else None


def create_store_engine(url: str) -> Engine:
    """A SQLAlchemy engine for `url`; SQLite files get WAL mode and enforced foreign keys.

    Raises:
        StoreError: the SQLite file's folder cannot be created.
    """
    parsed = make_url(url)
    kwargs = {}
    db = _sqlite_file(parsed)
    if parsed.get_backend_name() == "sqlite":
        if db:
            try:
                Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"database {url}: cannot create folder {Path(db).parent} ({exc.strerror})") from exc
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    engine = create_engine(url, json_serializer=json_text, **kwargs)
    if parsed.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            if db:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

    return engine


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision stamped in the database, or None for an empty database.

    Raises:
        StoreError: the file is not a database, or cannot be opened.
    """
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except (DatabaseError, OperationalError) as exc:
        raise StoreError(
            f"database {engine.url.render_as_string(hide_password=True)}: cannot read it ({exc.orig})"
        ) from exc


def upgrade(engine: Engine) -> str:
    """Apply every pending migration in one transaction; returns the new revision.

    Several processes may open a new database at once (`serve --workers N`, Ray Serve replicas): the
    revision is read again and the migrations run under a lock held for the whole transaction, so one
    process creates the schema and the others find it done (`BEGIN IMMEDIATE` on SQLite, whose writers then
    wait in SQLite's busy handler up to the 30 s timeout; `pg_advisory_xact_lock` on PostgreSQL). Before,
    each read "no revision" and all but one failed with "table ... already exists".

    Raises:
        StoreError: the database is at a revision unknown to this code (newer Workbench?) or unreadable.
    """
    script = ScriptDirectory.from_config(alembic_config(str(engine.url)))
    head = script.get_current_head()
    current = current_revision(engine)  # the usual case, an up-to-date database, takes no lock
    _check_known(engine, script, current)
    if current == head:
        return current
    cfg = alembic_config(str(engine.url))
    try:
        with engine.begin() as conn:
            _lock_schema(conn)
            current = MigrationContext.configure(conn).get_current_revision()
            _check_known(engine, script, current)
            if current != head:
                cfg.attributes["connection"] = conn
                with _ALEMBIC_LOCK:
                    command.upgrade(cfg, "head")
    except (DatabaseError, OperationalError) as exc:
        raise StoreError(
            f"database {engine.url.render_as_string(hide_password=True)}: cannot create or upgrade its schema "
            f"({exc.orig})"
        ) from exc
    return head


# Alembic's `context` is one module-level proxy: two threads upgrading two databases at once would share it
_ALEMBIC_LOCK = threading.Lock()

# the key of the PostgreSQL advisory lock held while the schema is created or upgraded (any fixed 64-bit number)
_SCHEMA_LOCK_KEY = 0x57_42_53_43_48_45_4D_41  # "WBSCHEMA"


def _lock_schema(conn: Any) -> None:
    """Hold the database's write lock until `conn`'s transaction ends (see `upgrade`)."""
    backend = conn.engine.url.get_backend_name()
    if backend == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the driver opens no transaction of its own before DDL
    elif backend == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK_KEY})")


def _check_known(engine: Engine, script: ScriptDirectory, current: str | None) -> None:
    if current is not None and current not in {rev.revision for rev in script.walk_revisions()}:
        raise StoreError(
            f"database {engine.url.render_as_string(hide_password=True)} is at schema revision {current}, "
            f"which this Workbench does not know (newest known: {script.get_current_head()}); "
            "it was written by a newer version — upgrade Workbench or point WORKBENCH_DATABASE_URL elsewhere"
        )


class SQLiteWriteQueue:
    """Writers of one SQLite file wait for each other in a queue instead of in SQLite's busy handler.

    SQLite lets one connection write at a time; a connection that finds the file locked sleeps and
    retries (its default busy handler: 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms, then 100 ms,
    up to the 30 s timeout), so a writer can sleep tens of milliseconds after the lock was released,
    and one process that writes again at once can keep another waiting. Several processes writing one
    file (Ray Serve replicas on a node, `serve --workers N`) hold this instead around each write
    transaction: a thread lock for the process's own threads, then an exclusive `flock` on
    `FILE-wlock` beside the database, which the kernel grants as soon as it is released (the GIL is
    released while waiting). SQLite's own locking is unchanged and still decides: a process that
    does not take the queue (the sqlite3 shell) is waited for as before.

    Where the lock file cannot be created (a read-only folder) or there is no `flock` (Windows), only the
    thread lock is taken.
    """

    def __init__(self, database: str | Path) -> None:
        self.path = f"{database}-wlock"
        self._threads = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._unavailable = False

    def _file(self) -> int | None:
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        if self._unavailable or fcntl is None:
            return None
        try:  # a forked child opens its own: a flock belongs to the open file, which fork shares
            self._fd, self._pid = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), os.getpid()
        except OSError as exc:
            log.info("SQLite write queue %s not available (%s): SQLite's busy handler alone", self.path, exc.strerror)
            self._unavailable = True
            return None
        return self._fd

    def __enter__(self) -> SQLiteWriteQueue:
        self._threads.acquire()
        try:
            fd = self._file()
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None and self._pid == os.getpid():
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()


def sqlite_write_queue(engine: Engine) -> SQLiteWriteQueue | None:
    """The `SQLiteWriteQueue` of a SQLite file engine; None for other databases and in-memory SQLite."""
    db = _sqlite_file(engine.url)
    return None if db is None else SQLiteWriteQueue(Path(db).expanduser())


def _sqlite_file(url: Any) -> str | None:
    """The file of a SQLite URL (`sqlalchemy.engine.URL`); None for other databases and in-memory SQLite."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return url.database
