"""Chunk revisions (``GET /chunks/:kid/:id/revisions``, ``POST …/revert``): a chunk's content before each
edit.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("chunk_revisions",
                    sa.Column("id", sa.String(length=36), nullable=False),
                    sa.Column("tenant_id", sa.Integer(), nullable=False),
                    sa.Column("knowledge_base_id", sa.String(length=36), nullable=False),
                    sa.Column("knowledge_id", sa.String(length=36), nullable=False),
                    sa.Column("chunk_id", sa.String(length=36), nullable=False),
                    sa.Column("revision", sa.Integer(), nullable=False),
                    sa.Column("content", sa.Text(), nullable=False),
                    sa.Column("is_enabled", sa.Boolean(), nullable=False),
                    sa.Column("edit_source", sa.String(length=16), nullable=False),
                    sa.Column("edited_at", sa.DateTime(timezone=True), nullable=False),
                    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
                    sa.ForeignKeyConstraint(["chunk_id"], ["chunks.id"], ondelete="CASCADE"),
                    sa.PrimaryKeyConstraint("id"))
    op.create_index(op.f("ix_chunk_revisions_tenant_id"), "chunk_revisions", ["tenant_id"], unique=False)
    op.create_index("ux_chunk_revisions_chunk_revision", "chunk_revisions", ["chunk_id", "revision"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("ux_chunk_revisions_chunk_revision", table_name="chunk_revisions")
    op.drop_index(op.f("ix_chunk_revisions_tenant_id"), table_name="chunk_revisions")
    op.drop_table("chunk_revisions")
