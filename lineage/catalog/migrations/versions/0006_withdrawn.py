"""withdrawn releases: when, by which takedown request, the successor that replaces them, and why a read
of one was allowed

Revision ID: 0006_withdrawn
Revises: 0005_takedowns
Create Date: 2026-12-01 16:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_withdrawn"
down_revision = "0005_takedowns"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMNs: a batch copy of releases would break SQLite's foreign keys to it
    op.add_column("releases", sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("releases", sa.Column("withdrawn_by", sa.Integer(), nullable=True))
    op.add_column("releases", sa.Column("successor", sa.String(length=401), nullable=True))
    op.add_column("release_reads", sa.Column("override_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("release_reads", schema=None) as batch_op:
        batch_op.drop_column("override_reason")
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.drop_column("successor")
        batch_op.drop_column("withdrawn_by")
        batch_op.drop_column("withdrawn_at")
