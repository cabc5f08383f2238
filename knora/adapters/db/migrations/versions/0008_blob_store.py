"""Uploaded originals in the database (``KNORA_BLOB_STORE=postgres``): objects and their pieces.

Created on every database so that the schema is one; only the ``postgres`` blob store writes to it. On
PostgreSQL the pieces are stored uncompressed (``STORAGE EXTERNAL``): originals are mostly compressed already
(PDF, DOCX, images), and compressing them again costs CPU for nothing.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("blob_objects",
                    sa.Column("key", sa.Text(), nullable=False),
                    sa.Column("size", sa.BigInteger(), nullable=False),
                    sa.Column("pieces", sa.Integer(), nullable=False),
                    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint("key"))
    op.create_table("blob_pieces",
                    sa.Column("key", sa.Text(), nullable=False),
                    sa.Column("seq", sa.Integer(), nullable=False),
                    sa.Column("data", sa.LargeBinary(), nullable=False),
                    sa.ForeignKeyConstraint(["key"], ["blob_objects.key"], ondelete="CASCADE"),
                    sa.PrimaryKeyConstraint("key", "seq"))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE blob_pieces ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("blob_pieces")
    op.drop_table("blob_objects")
