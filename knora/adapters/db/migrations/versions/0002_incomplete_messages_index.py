"""A partial index for the orphan sweep: incomplete assistant messages by ``created_at``.

The sweep (``ChatService.close_orphans``, every lease TTL on every replica) asked for incomplete assistant
messages with no index to help, so each sweep read the whole messages table. The index holds only turns in
flight; its predicate is written as SQLAlchemy renders ``tables.INCOMPLETE_TURN`` on each dialect, so the
sweep's query (which uses that expression) matches it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_messages_incomplete", "messages", ["created_at"], unique=False,
                    sqlite_where=sa.text("is_completed IS 0 AND role = 'assistant'"),
                    postgresql_where=sa.text("is_completed IS false AND role = 'assistant'"))


def downgrade() -> None:
    op.drop_index("ix_messages_incomplete", table_name="messages")
