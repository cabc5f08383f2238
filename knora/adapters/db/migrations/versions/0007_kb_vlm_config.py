"""Knowledge bases carry WeKnora's ``vlm_config`` ({enabled, model_id}): captions for document images.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("knowledge_bases", sa.Column("vlm_config", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("knowledge_bases", "vlm_config")
