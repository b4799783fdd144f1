"""pipeline runs of stages (issue #20): a pipeline_runs row per run of a staged pipeline, and on each
stage's run its pipeline run, stage name and cache key

Revision ID: 0011_stages
Revises: 0010_evalsets
Create Date: 2026-12-02 01:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_stages"
down_revision = "0010_evalsets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipeline_runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("pipeline", sa.String(length=200), nullable=False),
        sa.Column("engine", sa.String(length=20), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("stages", sa.JSON(), nullable=False),
        sa.Column("code_version", sa.String(length=100), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("pipeline_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pipeline_runs_pipeline"), ["pipeline"], unique=False)
    # plain ADD COLUMNs: a batch copy of runs would break SQLite's foreign keys to it (and
    # SQLite cannot add a foreign key to an existing table, so pipeline_run_id has none)
    op.add_column("runs", sa.Column("pipeline_run_id", sa.String(length=36), nullable=True))
    op.add_column("runs", sa.Column("stage", sa.String(length=100), nullable=True))
    op.add_column("runs", sa.Column("cache_key", sa.String(length=64), nullable=True))
    op.add_column("runs", sa.Column("cache_parts", sa.JSON(), nullable=True))
    op.create_index(op.f("ix_runs_pipeline_run_id"), "runs", ["pipeline_run_id"], unique=False)
    op.create_index(op.f("ix_runs_cache_key"), "runs", ["cache_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_runs_cache_key"), table_name="runs")
    op.drop_index(op.f("ix_runs_pipeline_run_id"), table_name="runs")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        for column in ("cache_parts", "cache_key", "stage", "pipeline_run_id"):
            batch_op.drop_column(column)
    with op.batch_alter_table("pipeline_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pipeline_runs_pipeline"))
    op.drop_table("pipeline_runs")
