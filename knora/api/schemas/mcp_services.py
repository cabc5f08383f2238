"""MCP services: the create/update body, the per-tool approval flag and the (masked) record returned."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from knora.api.schemas.wire import Bool, Obj, RequestBody, Str
from knora.domain.mcp import MCPService


class MCPServiceRequest(RequestBody):
    name: Str = None
    description: Str = None
    transport_type: Str = None
    url: Str = None
    headers: Obj = None
    auth_config: Obj = None
    advanced_config: Obj = None
    stdio_config: Obj = None
    env_vars: Obj = None
    enabled: Bool = None


class ToolApprovalRequest(RequestBody):
    require_approval: Bool = None
    requires_approval: Bool = None  # accepted as a synonym


class MCPServiceOut(MCPService):
    """``auth_config`` and ``env_vars`` values are masked ("******")."""


class ToolApproval(BaseModel):
    tool_name: str
    require_approval: bool


class MCPTestResult(BaseModel):
    success: bool
    message: str
    tools: list[dict[str, Any]]
