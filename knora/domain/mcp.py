"""MCP service configurations (``/mcp-services``): remote tool servers the agent may use, per tenant."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from knora.domain.common import new_id, utcnow

TRANSPORTS = ("sse", "http-streamable", "stdio")


class MCPService(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    name: str
    description: str = ""
    transport_type: str = "sse"  # sse | http-streamable | stdio
    url: str = ""
    headers: dict[str, Any] = Field(default_factory=dict)
    # api_key, token — never serialised back in clear
    auth_config: dict[str, Any] = Field(default_factory=dict)
    advanced_config: dict[str, Any] = Field(default_factory=dict)  # timeout, retry_count, retry_delay
    stdio_config: dict[str, Any] = Field(default_factory=dict)  # command, args
    env_vars: dict[str, Any] = Field(default_factory=dict)
    tool_approvals: dict[str, Any] = Field(default_factory=dict)  # remote tool name → requires human approval
    enabled: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
