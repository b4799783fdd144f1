"""contamination hits: every sample of a checked dataset version that contains an eval item (issue #19)

Revision ID: 0010_evalsets
Revises: 0009_purge
Create Date: 2026-12-01 18:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_evalsets"
down_revision = "0009_purge"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contamination_scans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), nullable=False),
        sa.Column("eval_set_version_id", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("coverage", sa.String(length=20), nullable=False),
        sa.Column("checked_samples", sa.BigInteger(), nullable=False),
        sa.Column("contaminated_items", sa.BigInteger(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["dataset_version_id"], ["dataset_versions.id"]),
        sa.ForeignKeyConstraint(["eval_set_version_id"], ["eval_set_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_version_id", "eval_set_version_id"),
    )
    with op.batch_alter_table("contamination_scans", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_contamination_scans_dataset_version_id"), ["dataset_version_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_contamination_scans_eval_set_version_id"), ["eval_set_version_id"], unique=False
        )
    op.create_table(
        "contamination_hits",
        sa.Column("scan_id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.String(length=300), nullable=False),
        sa.Column("sample_id", sa.String(length=300), nullable=False),
        sa.Column("matched_item_ngrams", sa.Integer(), nullable=False),
        sa.Column("item_ngrams", sa.Integer(), nullable=False),
        sa.Column("matched_sample_ngrams", sa.Integer(), nullable=False),
        sa.Column("sample_ngrams", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["scan_id"], ["contamination_scans.id"]),
        sa.PrimaryKeyConstraint("scan_id", "item_id", "sample_id"),
    )


def downgrade() -> None:
    op.drop_table("contamination_hits")
    with op.batch_alter_table("contamination_scans", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_contamination_scans_eval_set_version_id"))
        batch_op.drop_index(batch_op.f("ix_contamination_scans_dataset_version_id"))
    op.drop_table("contamination_scans")
