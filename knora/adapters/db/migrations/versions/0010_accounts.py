"""Accounts and roles (issue 14): users, their tenant memberships with a role, login sessions, invitations,
shares of knowledge bases and agents with other tenants, the audit log; API keys get a role, an expiry, a last
use and their creator. Keys made before this revision were all-powerful and become owner keys.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as t:
        t.add_column(sa.Column("role", sa.String(16), nullable=False, server_default="owner"))
        t.add_column(sa.Column("expires_at", _TS, nullable=True))
        t.add_column(sa.Column("last_used_at", _TS, nullable=True))
        t.add_column(sa.Column("created_by", sa.String(64), nullable=True))
    op.create_table("users",
                    sa.Column("id", sa.String(36), primary_key=True),
                    sa.Column("username", sa.String(64), nullable=False, unique=True),
                    sa.Column("email", sa.String(255), nullable=False, unique=True),
                    sa.Column("password_hash", sa.String(255), nullable=False),
                    sa.Column("is_active", sa.Boolean(), nullable=False),
                    sa.Column("created_at", _TS, nullable=False),
                    sa.Column("updated_at", _TS, nullable=False))
    op.create_table("tenant_members",
                    sa.Column("tenant_id", sa.Integer(), sa.ForeignKey("tenants.id", ondelete="CASCADE"),
                              primary_key=True),
                    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                              primary_key=True),
                    sa.Column("role", sa.String(16), nullable=False),
                    sa.Column("invited_by", sa.String(64), nullable=True),
                    sa.Column("created_at", _TS, nullable=False))
    op.create_index("ix_tenant_members_user_id", "tenant_members", ["user_id"])
    op.create_table("auth_sessions",
                    sa.Column("id", sa.String(36), primary_key=True),
                    sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"),
                              nullable=False),
                    sa.Column("refresh_hash", sa.String(64), nullable=False, unique=True),
                    sa.Column("expires_at", _TS, nullable=False),
                    sa.Column("revoked_at", _TS, nullable=True),
                    sa.Column("created_at", _TS, nullable=False))
    op.create_index("ix_auth_sessions_user_id", "auth_sessions", ["user_id"])
    op.create_table("tenant_invitations",
                    sa.Column("id", sa.String(36), primary_key=True),
                    sa.Column("tenant_id", sa.Integer(), sa.ForeignKey("tenants.id", ondelete="CASCADE"),
                              nullable=False),
                    sa.Column("email", sa.String(255), nullable=False),
                    sa.Column("role", sa.String(16), nullable=False),
                    sa.Column("invited_by", sa.String(64), nullable=True),
                    sa.Column("status", sa.String(16), nullable=False),
                    sa.Column("expires_at", _TS, nullable=True),
                    sa.Column("created_at", _TS, nullable=False))
    op.create_index("ix_tenant_invitations_tenant_id", "tenant_invitations", ["tenant_id"])
    op.create_index("ix_tenant_invitations_email", "tenant_invitations", ["email"])
    op.create_table("shares",
                    sa.Column("id", sa.String(36), primary_key=True),
                    sa.Column("resource_type", sa.String(32), nullable=False),
                    sa.Column("resource_id", sa.String(36), nullable=False),
                    sa.Column("owner_tenant_id", sa.Integer(),
                              sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("tenant_id", sa.Integer(), sa.ForeignKey("tenants.id", ondelete="CASCADE"),
                              nullable=False),
                    sa.Column("permission", sa.String(16), nullable=False),
                    sa.Column("created_by", sa.String(64), nullable=True),
                    sa.Column("created_at", _TS, nullable=False))
    op.create_index("ix_shares_resource_target", "shares", ["resource_type", "resource_id", "tenant_id"],
                    unique=True)
    op.create_index("ix_shares_owner_tenant_id", "shares", ["owner_tenant_id"])
    op.create_index("ix_shares_tenant_id", "shares", ["tenant_id"])
    op.create_table("audit_log",
                    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
                    sa.Column("tenant_id", sa.Integer(), nullable=False),
                    sa.Column("actor", sa.String(128), nullable=False),
                    sa.Column("action", sa.String(255), nullable=False),
                    sa.Column("target", sa.Text(), nullable=False),
                    sa.Column("status", sa.Integer(), nullable=False),
                    sa.Column("ip", sa.String(64), nullable=False),
                    sa.Column("detail", sa.JSON(), nullable=False),
                    sa.Column("created_at", _TS, nullable=False))
    op.create_index("ix_audit_log_tenant_id_id", "audit_log", ["tenant_id", "id"])


def downgrade() -> None:
    for table in ("audit_log", "shares", "tenant_invitations", "auth_sessions", "tenant_members", "users"):
        op.drop_table(table)
    with op.batch_alter_table("api_keys") as t:
        for column in ("created_by", "last_used_at", "expires_at", "role"):
            t.drop_column(column)
