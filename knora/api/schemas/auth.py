"""The bodies of the account routes (``knora.api.routes.accounts``) and the tenant routes
(``knora.api.routes.tenants``), with WeKnora's field names."""

from __future__ import annotations

from pydantic import Field

from knora.api.schemas.wire import RequestBody


class LoginRequest(RequestBody):
    email: str = Field("", description="the user's e-mail or username")
    username: str = Field("", description="the user's username (instead of email)")
    password: str = ""


class RegisterRequest(RequestBody):
    username: str = ""
    email: str = ""
    password: str = ""


class RefreshRequest(RequestBody):
    refreshToken: str = ""  # noqa: N815 - WeKnora's field name
    refresh_token: str = ""


class ChangePasswordRequest(RequestBody):
    old_password: str = ""
    current_password: str = Field("", description="the same as old_password")
    new_password: str = ""


class TenantRequest(RequestBody):
    name: str | None = None
    description: str | None = None


class MemberRequest(RequestBody):
    email: str = ""
    role: str = Field("viewer", description="owner, admin, contributor or viewer")


class RoleRequest(RequestBody):
    role: str = ""


class ApiKeyRequest(RequestBody):
    name: str = ""
    role: str | None = Field(
        None, description="viewer, contributor or admin (default: admin, capped at yours)"
    )
    full_access: bool | None = Field(None, description="WeKnora's flag: false makes a read-only (viewer) key")
    read_only: bool | None = Field(None, description="a viewer key: reads and chats only")
    expires_at_unix: int | None = Field(None, description="when the key stops working (Unix seconds)")


class ShareRequest(RequestBody):
    tenant_id: int = Field(..., description="the tenant the knowledge base or agent is shared with")
    permission: str = Field("read", description="read (search and chat) or edit (also change its documents)")
