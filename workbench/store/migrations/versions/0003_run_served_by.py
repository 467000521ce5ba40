"""runs: `served_by`, the Ray node and Serve replica (or Ray Data worker) that ran a run

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Runs of one process keep NULL; runs served on a Ray cluster (`workbench serve --ray`,
`workbench run --ray`) name where they ran, e.g. `node 3f9c2a01d4e5 replica pipelines#a1b2c3`.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("served_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("served_by")
