"""takedown requests: what goes, who asked, why, and how far the takedown got

Revision ID: 0005_takedowns
Revises: 0004_release_read_recorder
Create Date: 2026-12-01 16:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_takedowns"
down_revision = "0004_release_read_recorder"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "takedown_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("selector", sa.JSON(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("purged_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("takedown_requests")
