"""Who is calling and what they may do: roles in a tenant, the authenticated principal, accounts, members,
API keys, shares and audit entries (issue 14).

Roles are WeKnora's four (``internal/types/tenant_member.go``): a viewer reads and chats, a contributor also
writes knowledge, an admin also manages models, agents, MCP services, web search, members and keys, and only
an owner deletes the tenant. Which route needs which role is decided in one place: ``knora.api.policy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from knora.domain.common import utcnow


class Role(StrEnum):
    VIEWER = "viewer"
    CONTRIBUTOR = "contributor"
    ADMIN = "admin"
    OWNER = "owner"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def covers(self, needed: Role) -> bool:
        """Whether this role may do what ``needed`` may."""
        return _RANK[self] >= _RANK[needed]


_RANK = {Role.VIEWER: 0, Role.CONTRIBUTOR: 1, Role.ADMIN: 2, Role.OWNER: 3}
# "editor" is the name for WeKnora's contributor; accepted on input
ROLE_ALIASES = {"editor": Role.CONTRIBUTOR, "member": Role.CONTRIBUTOR, "reader": Role.VIEWER}


def parse_role(value: object) -> Role | None:
    """The role a request names (WeKnora's names, or the aliases), or None."""
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    return ROLE_ALIASES.get(v) or (Role(v) if v in Role._value2member_map_ else None)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller acting in one tenant: a user signed in with a token, or an API key."""

    tenant_id: int
    role: Role
    user_id: str | None = None  # set for a signed-in user
    session_id: str | None = None  # the login session a user's token belongs to
    key_id: str | None = None  # set for an API key
    key_prefix: str = ""
    in_tenant: bool = True  # False: a signed-in user who is not a member of ``tenant_id`` (0: of none)

    @property
    def actor(self) -> str:
        """How the audit log names the caller."""
        if self.user_id is not None:
            return f"user:{self.user_id}"
        return f"key:{self.key_id}" + (f" ({self.key_prefix}…)" if self.key_prefix else "")

    @property
    def caller(self) -> str:
        """Whose request budget a request spends (``knora.api.rate_limit``)."""
        return f"user:{self.user_id}" if self.user_id is not None else f"key:{self.key_id}"


class User(BaseModel):
    id: str
    username: str
    email: str
    is_active: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Member(BaseModel):
    """A user's membership of a tenant, joined with the user's names (WeKnora's ``TenantMember``)."""

    tenant_id: int
    tenant_name: str = ""
    user_id: str
    username: str = ""
    email: str = ""
    role: Role
    invited_by: str | None = None
    joined_at: datetime = Field(default_factory=utcnow)


class Invitation(BaseModel):
    id: str
    tenant_id: int
    tenant_name: str = ""
    email: str
    role: Role
    invited_by: str | None = None
    status: str = "pending"  # pending | accepted | declined | revoked
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime | None = None


class ApiKey(BaseModel):
    """An API key as listed: never the key itself, only the few characters kept to recognise it."""

    id: str
    tenant_id: int
    name: str
    prefix: str
    role: Role
    expires_at: datetime | None = None
    last_used_at: datetime | None = None
    created_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


@dataclass(frozen=True)
class KeyGrant:
    """What a known API key grants: resolved from its hash, cached briefly."""

    key_id: str
    tenant_id: int
    role: Role
    prefix: str
    expires_at: datetime | None = None


KB_SHARE = "knowledge_base"  # a share's resource type
AGENT_SHARE = "agent"


class SharePermission(StrEnum):
    READ = "read"  # a knowledge base: search and chat over it, read its documents; an agent: chat with it
    EDIT = "edit"  # a knowledge base: also add documents (agents are shared to use only)


class Share(BaseModel):
    """A knowledge base or agent of one tenant made usable by another."""

    id: str
    resource_type: str  # "knowledge_base" | "agent"
    resource_id: str
    owner_tenant_id: int
    tenant_id: int  # the receiving tenant
    permission: SharePermission
    created_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class AuditEntry(BaseModel):
    id: int = 0
    tenant_id: int
    actor: str
    action: str  # e.g. "POST /api/v1/models"
    target: str = ""  # the path's ids, e.g. "model_id=…"
    status: int = 200
    ip: str = ""
    detail: dict[str, object] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
