"""HTTP service: API tokens, OpenLineage events and graph, release deprecation reason.

Revision ID: 0002_api
Revises: 0001_initial
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_api"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "lineage_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(length=20), nullable=False),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("job_namespace", sa.String(length=500), nullable=False),
        sa.Column("job_name", sa.String(length=1000), nullable=False),
        sa.Column("producer", sa.String(length=1000), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_lineage_events_run_id"), "lineage_events", ["run_id"], unique=False)
    op.create_table(
        "lineage_nodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("namespace", sa.String(length=500), nullable=False),
        sa.Column("name", sa.String(length=1000), nullable=False),
        sa.Column("facets", sa.JSON(), nullable=False),
        sa.Column("latest_run_id", sa.String(length=100), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "namespace", "name"),
    )
    op.create_table(
        "lineage_edges",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("direction", sa.String(length=3), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["lineage_nodes.id"],
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["lineage_nodes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "dataset_id", "direction"),
    )
    op.create_index(op.f("ix_lineage_edges_dataset_id"), "lineage_edges", ["dataset_id"], unique=False)
    op.create_index(op.f("ix_lineage_edges_job_id"), "lineage_edges", ["job_id"], unique=False)
    op.add_column("releases", sa.Column("deprecation_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("releases") as batch:  # SQLite drops columns by copying the table
        batch.drop_column("deprecation_reason")
    op.drop_index(op.f("ix_lineage_edges_job_id"), table_name="lineage_edges")
    op.drop_index(op.f("ix_lineage_edges_dataset_id"), table_name="lineage_edges")
    op.drop_table("lineage_edges")
    op.drop_table("lineage_nodes")
    op.drop_index(op.f("ix_lineage_events_run_id"), table_name="lineage_events")
    op.drop_table("lineage_events")
    op.drop_table("api_tokens")
