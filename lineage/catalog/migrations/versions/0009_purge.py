"""purged takedowns: which request's purge deleted a dataset version's or an export's bytes (they stay in
the catalog as tombstones), and what the purge deleted

Revision ID: 0009_purge
Revises: 0008_exports
Create Date: 2026-12-01 18:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_purge"
down_revision = "0008_exports"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMNs: a batch copy would break SQLite's foreign keys to these tables
    op.add_column("dataset_versions", sa.Column("purged_by", sa.Integer(), nullable=True))
    op.add_column("exports", sa.Column("purged_by", sa.Integer(), nullable=True))
    op.add_column("takedown_requests", sa.Column("purge_report", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("takedown_requests", schema=None) as batch_op:
        batch_op.drop_column("purge_report")
    with op.batch_alter_table("exports", schema=None) as batch_op:
        batch_op.drop_column("purged_by")
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_column("purged_by")
