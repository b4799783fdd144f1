"""eval sets and their versions, and contamination checks recorded on releases (issue #19)

Revision ID: 0007_evalsets
Revises: 0006_withdrawn
Create Date: 2026-12-01 16:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_evalsets"
down_revision = "0006_withdrawn"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("task", sa.String(length=40), nullable=False),
        sa.Column("split", sa.String(length=100), nullable=False),
        sa.Column("language", sa.String(length=40), nullable=False),
        sa.Column("license", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("deprecated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("deprecation_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "eval_set_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("eval_set_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content_digest", sa.String(length=64), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), nullable=True),
        sa.Column("text_fields", sa.JSON(), nullable=False),
        sa.Column("join", sa.String(length=20), nullable=False),
        sa.Column("id_field", sa.String(length=200), nullable=True),
        sa.Column("members", sa.JSON(), nullable=False),
        sa.Column("item_count", sa.BigInteger(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_version_id"], ["dataset_versions.id"]),
        sa.ForeignKeyConstraint(["eval_set_id"], ["eval_sets.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("eval_set_id", "version"),
    )
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=300), nullable=False),
        sa.Column("checkpoint", sa.String(length=300), nullable=False),
        sa.Column("eval_set_version_id", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("training_jobs", sa.JSON(), nullable=False),
        sa.Column("recorded_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["eval_set_version_id"], ["eval_set_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_eval_runs_eval_set_version_id"), "eval_runs", ["eval_set_version_id"], unique=False)
    # a plain ADD COLUMN (SQLite has it for a column with a constant default): a batch operation would copy
    # ``releases``, which replicas, pins and reads refer to, and SQLite's foreign keys refuse dropping it
    op.add_column(
        "releases", sa.Column("contamination_checks", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
    )


def downgrade() -> None:
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.drop_column("contamination_checks")
    op.drop_index(op.f("ix_eval_runs_eval_set_version_id"), table_name="eval_runs")
    op.drop_table("eval_runs")
    op.drop_table("eval_set_versions")
    op.drop_table("eval_sets")
