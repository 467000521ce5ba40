"""`Store`: the unit-of-work API over the run store tables.

Each public method is one transaction; a run and its trace events are written together or
not at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, or_, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, selectinload, sessionmaker

from ..names import check_name
from .database import StoreError, create_store_engine, current_revision, sqlite_write_queue, upgrade
from .models import KnowledgeBaseRow, ModelRow, PipelineRow, PipelineStageRow, RunRow, TraceEventRow, utcnow

STAGES = ("production", "staging")


@dataclass(slots=True)
class TraceEvent:
    """One event of a run, in order: `kind` is rule_firing, model_call, gate_decision, proof or node."""

    kind: str
    node: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    at: float | None = None  # seconds since the run started


class Store:
    """Run store bound to one database URL; migrates the schema on open.

    Raises (from `open`):
        StoreError: unreadable database or one written by a newer Workbench.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._inserts: dict[tuple[str, tuple[str, ...], tuple[str, ...] | None], _Insert] = {}
        self._write_queue = sqlite_write_queue(engine)

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        """Open (and create or upgrade) the store at `url` (default: settings' database_url)."""
        if url is None:
            from workbench.config import get_settings

            url = get_settings().database_url
        engine = create_store_engine(url)
        upgrade(engine)
        return cls(engine)

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def revision(self) -> str | None:
        return current_revision(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception."""
        with self._sessions.begin() as session:
            yield session

    def close(self) -> None:
        self.engine.dispose()

    # -- knowledge bases, models, pipelines -------------------------------------------------
    def save_knowledge_base(self, name: str, version: str, sources: Sequence[tuple[str, str]]) -> bool:
        """Record a knowledge base version; returns False when that version was already stored (also when
        another thread or process stored it at the same moment).

        Raises InvalidNameError (a ValueError) for a name that breaks `workbench.names`' rule."""
        check_name(name, "knowledge base")
        stored = select(KnowledgeBaseRow.id).where(KnowledgeBaseRow.name == name, KnowledgeBaseRow.version == version)
        return self._store_once(
            stored, lambda: KnowledgeBaseRow(name=name, version=version, sources=[list(p) for p in sources])
        )

    def get_knowledge_base(self, name: str, version: str | None = None) -> KnowledgeBaseRow | None:
        """The given version, or the most recently recorded one."""
        with self.session() as s:
            q = select(KnowledgeBaseRow).where(KnowledgeBaseRow.name == name)
            q = q.where(KnowledgeBaseRow.version == version) if version else q.order_by(KnowledgeBaseRow.id.desc())
            return s.scalars(q.limit(1)).first()

    def save_model(self, name: str, version: str, format: str, task: str | None, signature: dict[str, Any]) -> bool:
        """Record a model version; returns False when that version was already stored (as `save_knowledge_base`)."""
        stored = select(ModelRow.id).where(ModelRow.name == name, ModelRow.version == version)
        return self._store_once(
            stored, lambda: ModelRow(name=name, version=version, format=format, task=task, signature=signature)
        )

    def list_models(self) -> list[ModelRow]:
        with self.session() as s:
            return list(s.scalars(select(ModelRow).order_by(ModelRow.name, ModelRow.id)))

    def save_pipeline(self, name: str, version: str, document: str) -> bool:
        """Record a pipeline version; returns False when that version was already stored.

        Raises InvalidNameError (a ValueError) for a name that breaks `workbench.names`' rule."""
        check_name(name, "pipeline")
        stored = select(PipelineRow.id).where(PipelineRow.name == name, PipelineRow.version == version)
        return self._store_once(stored, lambda: PipelineRow(name=name, version=version, document=document))

    def _store_once(self, stored: Any, row: Any) -> bool:
        """Insert `row()` unless the query `stored` finds it; False when it was already stored. Another thread
        or process (a second Ray replica) storing the same (name, version) between the check and the insert
        makes the insert break the unique constraint: that is "already stored" too. Raises IntegrityError for
        any other constraint the row breaks."""
        try:
            with self.session() as s:
                if s.scalar(stored) is not None:
                    return False
                s.add(row())
            return True
        except IntegrityError:
            with self.session() as s:
                if s.scalar(stored) is not None:
                    return False
            raise

    def pipeline_versions(self, name: str) -> list[PipelineRow]:
        """All stored versions of a pipeline, oldest first."""
        with self.session() as s:
            return list(s.scalars(select(PipelineRow).where(PipelineRow.name == name).order_by(PipelineRow.id)))

    def pipeline_names(self) -> list[str]:
        with self.session() as s:
            return sorted(set(s.scalars(select(PipelineRow.name))))

    def get_pipeline(self, name: str, version: str | None = None) -> PipelineRow | None:
        """A pipeline version: `version` if given (a unique prefix is enough), else the production
        stage, else the newest stored version."""
        with self.session() as s:
            if version is None:
                stage = s.get(PipelineStageRow, (name, "production"))
                if stage is not None:
                    version = stage.version
            q = select(PipelineRow).where(PipelineRow.name == name)
            if version is not None:
                rows = list(s.scalars(q.where(PipelineRow.version.startswith(version))))
                if len(rows) > 1:
                    raise StoreError(f"pipeline {name}: version prefix {version!r} is ambiguous ({len(rows)} versions)")
                return rows[0] if rows else None
            return s.scalars(q.order_by(PipelineRow.id.desc()).limit(1)).first()

    def delete_pipeline(self, name: str) -> int:
        """Delete every version and stage label of a pipeline (runs are kept); returns versions deleted."""
        with self.session() as s:
            s.execute(delete(PipelineStageRow).where(PipelineStageRow.pipeline_name == name))
            return s.execute(delete(PipelineRow).where(PipelineRow.name == name)).rowcount

    def set_stage(self, name: str, version: str, stage: str) -> str:
        """Point `stage` (production or staging) of pipeline `name` at `version`; returns the full version.

        Raises:
            StoreError: unknown stage, pipeline or version.
        """
        if stage not in STAGES:
            raise StoreError(f"stage {stage!r}: expected one of {', '.join(STAGES)}")
        row = self.get_pipeline(name, version)
        if row is None:
            raise StoreError(f"pipeline {name} has no version {version!r}")
        with self.session() as s:
            current = s.get(PipelineStageRow, (name, stage))
            if current is None:
                s.add(PipelineStageRow(pipeline_name=name, stage=stage, version=row.version))
            else:
                current.version = row.version
        return row.version

    def stages(self, name: str) -> dict[str, str]:
        with self.session() as s:
            return {
                r.stage: r.version
                for r in s.scalars(select(PipelineStageRow).where(PipelineStageRow.pipeline_name == name))
            }

    # -- runs ---------------------------------------------------------------------------------
    def record_run(self, run: RunRow | Mapping[str, Any], events: Sequence[TraceEvent]) -> str:
        """Write a run and its trace in one transaction; returns the run id (see `record_runs`).

        Raises:
            sqlalchemy.exc.SQLAlchemyError: on a database failure; nothing of the run is written.
            ValueError: a dict with unknown run columns.
        """
        return self.record_runs([(run, events)])[0]

    def record_runs(
        self, runs: Sequence[tuple[RunRow | Mapping[str, Any], Sequence[TraceEvent]]], *, skip_existing: bool = False
    ) -> list[str]:
        """Write runs with their trace events, all in one transaction; returns their ids in order.

        The one way a run is written (the pipeline's background `RunRecorder` groups runs through it,
        scripts and tests call it directly). A run is a `RunRow` (it gets its id set when it has
        none) or a dict of `RUN_COLUMNS`; missing ids are new UUIDs, missing `started_at` is now.
        Core inserts, two statements per call however many runs: no ORM unit of work on the hot path.

        `skip_existing=True` makes the write idempotent: a run whose id is already stored (a request
        retried on another Ray Serve replica with the id chosen at the ingress) is left as it is, its
        trace events too (`INSERT ... ON CONFLICT DO NOTHING` on SQLite and PostgreSQL).

        Raises:
            sqlalchemy.exc.SQLAlchemyError: on a database failure (a duplicate id included, unless
                `skip_existing`); nothing of any of these runs is written.
            ValueError: a dict with unknown run columns.
        """
        rows, events = [], []
        for run, evs in runs:
            row = run_columns(run)
            if isinstance(run, RunRow):
                run.id = row["id"]
            rows.append(row)
            events += [
                {"run_id": row["id"], "seq": i, "kind": e.kind, "node": e.node, "payload": e.payload, "at": e.at}
                for i, e in enumerate(evs)
            ]
        if not rows:
            return []
        if self.engine.dialect.name == "sqlite":
            # every value bound (the columns' JSON included) before the transaction starts: SQLite's write lock,
            # which other processes on the file wait for (Ray replicas), is held for the inserts and commit only;
            # writers of the file wait for it in its write queue (`SQLiteWriteQueue`), not in SQLite's busy handler
            statements = [self._prepared(RunRow.__table__, rows, ("id",) if skip_existing else None)]
            if events:
                statements.append(
                    self._prepared(TraceEventRow.__table__, events, ("run_id", "seq") if skip_existing else None)
                )
            with self._write_queue or nullcontext(), self.engine.begin() as conn:
                for sql, parameters in statements:
                    conn.exec_driver_sql(sql, parameters)
            return [r["id"] for r in rows]
        with self.engine.begin() as conn:
            if skip_existing:
                _insert_new(conn, RunRow.__table__, rows, ["id"])
                if events:
                    _insert_new(conn, TraceEventRow.__table__, events, ["run_id", "seq"])
            else:
                conn.execute(insert(RunRow.__table__), rows)
                if events:
                    conn.execute(insert(TraceEventRow.__table__), events)
        return [r["id"] for r in rows]

    def _prepared(
        self, table: Any, rows: list[dict[str, Any]], conflict_keys: tuple[str, ...] | None
    ) -> tuple[str, list[tuple[Any, ...]]]:
        """SQLite's INSERT of `rows` (dicts with the same keys, in the same order) into `table` and its
        parameters, as `conn.execute(insert(table), rows)` would bind them (`conflict_keys`: `INSERT ...
        ON CONFLICT (keys) DO NOTHING`): the statement compiled once per table, keys and conflict target, and
        the column types' own bind processors applied (the values stored are those the Core insert stores;
        tests/workbench/test_store_insert.py compares the raw rows). Per run, SQLAlchemy's statement caching
        and per-execution set-up were a third of the recorder's CPU (0.30 vs 0.19 ms with the DBAPI alone,
        docs/serving.md "Fourth round").

        Raises:
            sqlalchemy.exc.StatementError: a value its column type refuses, as SQLAlchemy's execute raises it.
        """
        keys = tuple(rows[0])
        plan = self._inserts.get((table.name, keys, conflict_keys))
        dialect = self.engine.dialect
        if plan is None:
            plan = self._inserts[(table.name, keys, conflict_keys)] = _Insert(table, keys, dialect, conflict_keys)
        try:
            return plan.sql, plan.parameters(rows)
        except Exception as exc:  # a value its column type refuses: raised as SQLAlchemy's execute raises it
            raise DBAPIError.instance(plan.sql, None, exc, dialect.loaded_dbapi.Error, dialect=dialect) from exc

    def get_run(self, run_id: str) -> RunRow | None:
        """A run with its trace events loaded (a unique id prefix of 4+ characters is accepted; `%` and `_`
        in it are plain characters, not SQL LIKE wildcards). None when no run, or more than one, matches:
        `run_ids_with_prefix` tells which."""
        with self.session() as s:
            q = select(RunRow).options(selectinload(RunRow.events))
            row = s.scalars(q.where(RunRow.id == run_id)).first()
            if row is None and len(run_id) >= 4:
                rows = list(s.scalars(q.where(RunRow.id.startswith(run_id, autoescape=True)).limit(2)))
                row = rows[0] if len(rows) == 1 else None
            return row

    def run_ids_with_prefix(self, prefix: str, limit: int = 5) -> list[str]:
        """Ids of up to `limit` runs whose id starts with `prefix` (taken literally), sorted."""
        with self.session() as s:
            q = select(RunRow.id).where(RunRow.id.startswith(prefix, autoescape=True)).order_by(RunRow.id)
            return list(s.scalars(q.limit(limit)))

    def list_runs(
        self, pipeline: str | None = None, status: str | None = None, since: datetime | None = None, limit: int = 50
    ) -> list[RunRow]:
        """Recorded runs, newest first, filtered by pipeline name, status and start time."""
        with self.session() as s:
            q = select(RunRow).order_by(RunRow.started_at.desc()).limit(limit)
            if pipeline:
                q = q.where(RunRow.pipeline_name == pipeline)
            if status:
                q = q.where(RunRow.status == status)
            if since:
                q = q.where(RunRow.started_at >= since)
            return list(s.scalars(q))

    def run_summaries(
        self,
        pipeline: str | None = None,
        status: str | None = None,
        limit: int = 50,
        before: tuple[datetime, str] | None = None,
        error_chars: int = 500,
    ) -> list[dict[str, Any]]:
        """One page of runs, newest first, without inputs, outputs or explanation (keyset paging).

        Args:
            before: `(started_at, id)` of the last run of the previous page; this page starts after it.
            error_chars: the error text is cut to this many characters.

        Returns dicts `{"run_id", "pipeline", "version", "status", "error", "failed_node", "cache_hit",
        "knowledge_base_versions", "model_versions", "started_at" (datetime), "duration_s", "replay_of", "served_by"}`.
        Only summary columns are read, so a run with a huge stored input costs no more than any other.
        """
        cols = (
            RunRow.id,
            RunRow.pipeline_name,
            RunRow.pipeline_version,
            RunRow.status,
            func.substr(RunRow.error, 1, error_chars),
            RunRow.failed_node,
            RunRow.cache_hit,
            RunRow.knowledge_base_versions,
            RunRow.model_versions,
            RunRow.started_at,
            RunRow.duration,
            RunRow.replay_of,
            RunRow.served_by,
        )
        q = select(*cols).order_by(RunRow.started_at.desc(), RunRow.id.desc()).limit(limit)
        if pipeline:
            q = q.where(RunRow.pipeline_name == pipeline)
        if status:
            q = q.where(RunRow.status == status)
        if before is not None:
            at, rid = before
            q = q.where(or_(RunRow.started_at < at, and_(RunRow.started_at == at, RunRow.id < rid)))
        with self.session() as s:
            rows = s.execute(q).all()
        return [
            {
                "run_id": r[0],
                "pipeline": r[1],
                "version": r[2],
                "status": r[3],
                "error": r[4],
                "failed_node": r[5],
                "cache_hit": bool(r[6]),
                "knowledge_base_versions": dict(r[7] or {}),
                "model_versions": dict(r[8] or {}),
                "started_at": r[9],
                "duration_s": r[10],
                "replay_of": r[11],
                "served_by": r[12],
            }
            for r in rows
        ]

    def cached_run(self, pipeline_version: str, input_hash: str) -> RunRow | None:
        """The latest successful, non-cache-hit run of this pipeline version on this input (result cache)."""
        with self.session() as s:
            q = (
                select(RunRow)
                .where(
                    RunRow.pipeline_version == pipeline_version,
                    RunRow.input_hash == input_hash,
                    RunRow.status == "succeeded",
                    RunRow.cache_hit.is_(False),
                )
                .order_by(RunRow.started_at.desc())
                .limit(1)
            )
            return s.scalars(q).first()


__all__ = ["STAGES", "Store", "StoreError", "TraceEvent"]


class _Insert:
    """An INSERT of `keys` into `table` compiled for SQLite (positional parameters; `conflict_keys`: `ON CONFLICT
    DO NOTHING` on them), with the bind processors SQLAlchemy applies to those columns (JSON serialiser,
    DateTime, Boolean, Float)."""

    __slots__ = ("sql", "keys", "processors")

    def __init__(
        self, table: Any, keys: tuple[str, ...], dialect: Any, conflict_keys: tuple[str, ...] | None = None
    ) -> None:
        statement = insert(table)
        if conflict_keys is not None:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            statement = sqlite_insert(table).on_conflict_do_nothing(index_elements=list(conflict_keys))
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        if compiled.positiontup is None or list(compiled.positiontup) != list(keys) or compiled.insert_prefetch:
            raise ValueError(f"cannot precompile an insert of {keys} into {table.name}")  # never for our tables
        self.sql = str(compiled)
        self.keys = keys
        procs = compiled._bind_processors
        self.processors = [(i, procs[k]) for i, k in enumerate(keys) if k in procs]

    def parameters(self, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        keys, processors = self.keys, self.processors
        out = []
        for row in rows:
            values = [row[k] for k in keys]
            for i, process in processors:  # to None too, as SQLAlchemy does (a JSON None is 'null')
                values[i] = process(values[i])
            out.append(tuple(values))
        return out


def _insert_new(conn: Any, table: Any, rows: list[dict[str, Any]], keys: list[str]) -> None:
    """Insert the rows whose `keys` are not stored yet (`ON CONFLICT DO NOTHING`); other dialects
    fall back to reading the stored keys first."""
    if conn.dialect.name == "postgresql":  # SQLite's goes through `Store._prepared`
        from sqlalchemy.dialects.postgresql import insert as dialect_insert

        conn.execute(dialect_insert(table).on_conflict_do_nothing(index_elements=keys), rows)
        return
    cols = [table.c[k] for k in keys]
    wanted = {tuple(r[k] for k in keys) for r in rows}
    stored = {tuple(r) for r in conn.execute(select(*cols).where(cols[0].in_({w[0] for w in wanted})))}
    new = [r for r in rows if tuple(r[k] for k in keys) not in stored]
    if new:
        conn.execute(insert(table), new)


RUN_COLUMNS = (
    "id",
    "pipeline_name",
    "pipeline_version",
    "knowledge_base_versions",
    "model_versions",
    "inputs",
    "input_hash",
    "outputs",
    "explanation",
    "status",
    "error",
    "timings",
    "skipped",
    "failed_node",
    "cache_hit",
    "cached_from",
    "replay_of",
    "started_at",
    "duration",
    "served_by",
)


def run_columns(run: RunRow | Mapping[str, Any]) -> dict[str, Any]:
    """A run's columns as a dict for a Core insert, defaults filled (id: a new UUID when missing).

    Raises:
        ValueError: a dict naming columns a run does not have.
    """
    if isinstance(run, RunRow):
        d = {c: getattr(run, c) for c in RUN_COLUMNS}
    else:
        unknown = set(run) - set(RUN_COLUMNS)
        if unknown:
            raise ValueError(f"unknown run column(s) {sorted(unknown)}; expected some of {', '.join(RUN_COLUMNS)}")
        d = {c: run.get(c) for c in RUN_COLUMNS}
    d["id"] = d["id"] or str(uuid.uuid4())
    d["knowledge_base_versions"] = d["knowledge_base_versions"] or {}
    d["model_versions"] = d["model_versions"] or {}
    d["timings"] = d["timings"] or {}
    d["cache_hit"] = bool(d["cache_hit"])
    if d["started_at"] is None:
        d["started_at"] = utcnow()
    return d
