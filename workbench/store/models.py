"""ORM tables of the run store (SQLAlchemy 2 typed ORM).

Every schema change is an Alembic migration in `migrations/versions/`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class KnowledgeBaseRow(TimestampMixin, Base):
    """A knowledge base version: its name, content hash and source files."""

    __tablename__ = "knowledge_bases"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[str] = mapped_column(String(64))
    sources: Mapped[list[Any]] = mapped_column(JSON, doc="[[filename, text], ...] in load order")


class ModelRow(TimestampMixin, Base):
    """A model version: name, content hash of its weights, format, task and signature."""

    __tablename__ = "models"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[str] = mapped_column(String(64))
    format: Mapped[str] = mapped_column(String(40))
    task: Mapped[str | None] = mapped_column(String(60))
    signature: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class PipelineRow(TimestampMixin, Base):
    """A pipeline version: the graph document (YAML text, byte for byte) and its content hash."""

    __tablename__ = "pipelines"
    __table_args__ = (UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[str] = mapped_column(String(64))
    document: Mapped[str] = mapped_column(Text)


class PipelineStageRow(Base):
    """Stage label (`production`, `staging`) pointing at one version of a pipeline."""

    __tablename__ = "pipeline_stages"

    pipeline_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    stage: Mapped[str] = mapped_column(String(40), primary_key=True)
    version: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class RunRow(Base):
    """One pipeline run with the exact versions that produced it."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_pipeline_started", "pipeline_name", "started_at"),
        Index("ix_runs_cache_key", "pipeline_version", "input_hash"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    pipeline_name: Mapped[str] = mapped_column(String(200))
    pipeline_version: Mapped[str] = mapped_column(String(64))
    knowledge_base_versions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, doc="{kb name: version}")
    model_versions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, doc="{model name: version}")
    inputs: Mapped[dict[str, Any]] = mapped_column(JSON)
    input_hash: Mapped[str | None] = mapped_column(String(64))
    outputs: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    explanation: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), index=True, doc="succeeded | failed")
    error: Mapped[str | None] = mapped_column(Text)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, doc="{node: seconds}")
    skipped: Mapped[list[str] | None] = mapped_column(JSON, doc="ids of the nodes that did not run")
    failed_node: Mapped[str | None] = mapped_column(String(200))
    cache_hit: Mapped[bool] = mapped_column(Boolean, default=False)
    cached_from: Mapped[str | None] = mapped_column(String(36), doc="run whose outputs a cache hit reused")
    replay_of: Mapped[str | None] = mapped_column(String(36))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    duration: Mapped[float | None] = mapped_column(Float, doc="seconds")
    served_by: Mapped[str | None] = mapped_column(
        String(200), doc="where it ran on a Ray cluster: 'node <node id> replica <replica id>' (None: one process)"
    )

    events: Mapped[list[TraceEventRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="TraceEventRow.seq"
    )


class TraceEventRow(Base):
    """One recorded event of a run: a rule firing, a model call, a gate decision, a proof..."""

    __tablename__ = "trace_events"
    __table_args__ = (UniqueConstraint("run_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # looked up by the unique (run_id, seq) index: no index of its own (migration 0004)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(40), doc="rule_firing | model_call | gate_decision | proof | node")
    node: Mapped[str | None] = mapped_column(String(200))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    at: Mapped[float | None] = mapped_column(Float, doc="seconds since the run started")

    run: Mapped[RunRow] = relationship(back_populates="events")
