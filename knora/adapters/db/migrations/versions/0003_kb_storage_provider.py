"""Knowledge bases name their storage: ``storage_provider_config``, ``storage_backend_id`` (issue 13 item 1).

WeKnora's web UI refuses to add content to a knowledge base that names no storage provider. Knora has stored
every original under its data directory from the start, so existing rows are given what they always had: the
``local`` provider and Knora's one storage backend. An empty ``summary_model_id`` (the default chat model)
becomes ``builtin-chat``, the id ``GET /models`` lists that model by (issue 13 item 8): the web UI takes a
knowledge base without one for one that was never set up.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("knowledge_bases", sa.Column("storage_provider_config", sa.JSON(), nullable=True))
    op.add_column("knowledge_bases", sa.Column("storage_backend_id", sa.String(length=64), nullable=False,
                                               server_default=""))
    op.execute("UPDATE knowledge_bases SET storage_provider_config = '{\"provider\": \"local\"}', "
               "storage_backend_id = 'builtin-local'")
    op.execute("UPDATE knowledge_bases SET summary_model_id = 'builtin-chat' WHERE summary_model_id = ''")


def downgrade() -> None:
    op.drop_column("knowledge_bases", "storage_backend_id")
    op.drop_column("knowledge_bases", "storage_provider_config")
