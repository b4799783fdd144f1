"""exports: releases tokenized into training shards (Megatron, MDS), with their manifests

Revision ID: 0008_exports
Revises: 0007_evalsets
Create Date: 2026-12-01 16:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_exports"
down_revision = "0007_evalsets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("export_id", sa.String(length=32), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(length=20), nullable=False),
        sa.Column("tier", sa.String(length=100), nullable=True),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("tokenizer_digest", sa.String(length=80), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("samples", sa.BigInteger(), nullable=False),
        sa.Column("sequences", sa.BigInteger(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["release_id"], ["releases.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("export_id", "tier", "path"),
    )
    with op.batch_alter_table("exports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_exports_export_id"), ["export_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_exports_release_id"), ["release_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("exports", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_exports_release_id"))
        batch_op.drop_index(batch_op.f("ix_exports_export_id"))
    op.drop_table("exports")
