"""release reads: who recorded each one, and an index by release

Revision ID: 0004_release_read_recorder
Revises: 0003_replicas_gate
Create Date: 2026-11-30 14:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_release_read_recorder"
down_revision = "0003_replicas_gate"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("release_reads", schema=None) as batch_op:
        # existing rows were recorded before attribution existed: an empty recorder
        batch_op.add_column(sa.Column("recorded_by", sa.String(length=200), nullable=False, server_default=""))
        batch_op.create_index(batch_op.f("ix_release_reads_release_id"), ["release_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("release_reads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_release_reads_release_id"))
        batch_op.drop_column("recorded_by")
