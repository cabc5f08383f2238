"""Initial schema.

While the first release is being built, this revision creates the tables as declared in tables.py; it is
frozen into explicit operations before the schema is released (see docs/architecture.md).

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from alembic import op

from knora.adapters.db.tables import metadata

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata.create_all(op.get_bind())


def downgrade() -> None:
    metadata.drop_all(op.get_bind())
