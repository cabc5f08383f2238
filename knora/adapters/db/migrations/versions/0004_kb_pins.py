"""Pinned knowledge bases (``PUT /knowledge-bases/:id/pin``): one row per pinned knowledge base.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("knowledge_base_pins",
                    sa.Column("knowledge_base_id", sa.String(length=36), nullable=False),
                    sa.Column("tenant_id", sa.Integer(), nullable=False),
                    sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=False),
                    sa.ForeignKeyConstraint(["knowledge_base_id"], ["knowledge_bases.id"],
                                            ondelete="CASCADE"),
                    sa.PrimaryKeyConstraint("knowledge_base_id"))
    op.create_index(op.f("ix_knowledge_base_pins_tenant_id"), "knowledge_base_pins", ["tenant_id"],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_knowledge_base_pins_tenant_id"), table_name="knowledge_base_pins")
    op.drop_table("knowledge_base_pins")
