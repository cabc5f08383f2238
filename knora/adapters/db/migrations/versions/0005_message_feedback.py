"""An answer's like/dislike (``POST``/``DELETE /messages/:sid/:mid/feedback``): two columns on messages.

Existing messages have no feedback: both columns are empty.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("feedback_rating", sa.String(length=16), nullable=False,
                                        server_default=""))
    op.add_column("messages", sa.Column("feedback_reason", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    op.drop_column("messages", "feedback_reason")
    op.drop_column("messages", "feedback_rating")
