"""trace_events: drop `ix_trace_events_run_id`, which the unique `(run_id, seq)` index already covers

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Every lookup by run (a run's events in order, the cascade on deleting a run) is served by the
unique index on `(run_id, seq)`, whose first column is `run_id`, on SQLite and PostgreSQL alike. The
second index on `run_id` alone was only written: SQLite's work per recorded run fell from 0.212 to
0.162 ms without it (raw sqlite3, 3,000 runs of `demo_digits`' size, issue 14's fifth round).
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trace_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trace_events_run_id"))


def downgrade() -> None:
    with op.batch_alter_table("trace_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_trace_events_run_id"), ["run_id"], unique=False)
