"""runs: skipped nodes, failed node and cached-from run as columns (they rode in `timings`)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Runs written before this revision kept three hidden keys in the `timings` JSON (`_skipped`,
`_failed_node`, `_cached_from`); the upgrade moves them to their columns, the downgrade moves
them back.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_KEYS = {"_skipped": "skipped", "_failed_node": "failed_node", "_cached_from": "cached_from"}


def _runs() -> sa.Table:
    return sa.table(
        "runs",
        sa.column("id", sa.String),
        sa.column("timings", sa.JSON),
        sa.column("skipped", sa.JSON),
        sa.column("failed_node", sa.String),
        sa.column("cached_from", sa.String),
    )


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("skipped", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("failed_node", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("cached_from", sa.String(length=36), nullable=True))
    bind = op.get_bind()
    runs = _runs()
    rows = bind.execute(sa.select(runs.c.id, runs.c.timings)).fetchall()
    for run_id, timings in rows:
        t = json.loads(timings) if isinstance(timings, str) else dict(timings or {})
        if not any(k in t for k in _KEYS):
            continue
        values = {col: t.pop(key, None) for key, col in _KEYS.items()}
        bind.execute(sa.update(runs).where(runs.c.id == run_id).values(timings=t, **values))


def downgrade() -> None:
    bind = op.get_bind()
    runs = _runs()
    rows = bind.execute(
        sa.select(runs.c.id, runs.c.timings, runs.c.skipped, runs.c.failed_node, runs.c.cached_from)
    ).fetchall()
    for run_id, timings, skipped, failed_node, cached_from in rows:
        t = json.loads(timings) if isinstance(timings, str) else dict(timings or {})
        for key, value in (("_skipped", skipped), ("_failed_node", failed_node), ("_cached_from", cached_from)):
            if value is not None:
                t[key] = json.loads(value) if key == "_skipped" and isinstance(value, str) else value
        bind.execute(sa.update(runs).where(runs.c.id == run_id).values(timings=t))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("cached_from")
        batch_op.drop_column("failed_node")
        batch_op.drop_column("skipped")
