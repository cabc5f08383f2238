"""The login surface WeKnora's web UI uses (``knora.api.routes.system``)."""

from __future__ import annotations

from pydantic import Field

from knora.api.schemas.wire import RequestBody, Str


class LoginRequest(RequestBody):
    email: Str = Field(None, description="ignored: Knora has tenants with API keys, not users")
    password: Str = Field(None, description="a tenant API key")


class RefreshRequest(RequestBody):
    refreshToken: Str = None  # noqa: N815 - WeKnora's field name
    refresh_token: Str = None
