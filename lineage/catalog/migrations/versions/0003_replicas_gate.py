"""replicas, release reads and pins, publish gate, MinHash signatures

Revision ID: 0003_replicas_gate
Revises: 0002_api
Create Date: 2026-11-30 11:54:46.864304
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_replicas_gate"
down_revision = "0002_api"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "release_pins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pinned_by", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "release_reads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(length=300), nullable=False),
        sa.Column("world_size", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "replicas",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("tier", sa.String(length=100), nullable=False),
        sa.Column("table_path", sa.String(length=500), nullable=False),
        sa.Column("delta_version", sa.Integer(), nullable=True),
        sa.Column("primary", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("release_id", "tier"),
    )
    op.create_table(
        "replica_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("replica_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("xxh3_128", sa.String(length=32), nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["replica_id"],
            ["replicas.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("replica_id", "path"),
    )
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("signatures_path", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("signatures_delta_version", sa.Integer(), nullable=True))

    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gate", sa.JSON(), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.drop_column("gate")

    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_column("signatures_delta_version")
        batch_op.drop_column("signatures_path")

    op.drop_table("replica_files")
    op.drop_table("replicas")
    op.drop_table("release_reads")
    op.drop_table("release_pins")
