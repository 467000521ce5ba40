"""The run store: knowledge bases, models, pipelines, runs and their traces (SQLAlchemy 2).

SQLite (one file, WAL mode) by default; any SQLAlchemy URL by `WORKBENCH_DATABASE_URL`.
"""

from .database import StoreError, head_revision
from .models import Base, KnowledgeBaseRow, ModelRow, PipelineRow, PipelineStageRow, RunRow, TraceEventRow
from .store import Store, TraceEvent

__all__ = [
    "Base",
    "KnowledgeBaseRow",
    "ModelRow",
    "PipelineRow",
    "PipelineStageRow",
    "RunRow",
    "Store",
    "StoreError",
    "TraceEvent",
    "TraceEventRow",
    "head_revision",
]
