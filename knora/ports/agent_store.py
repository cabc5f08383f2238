"""Repositories of the agent area: custom agents and MCP services (SQL implementations in
adapters/db/repos)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from knora.domain.mcp import MCPService
from knora.domain.models import AgentConfig


@runtime_checkable
class AgentRepo(Protocol):
    async def get(self, tenant_id: int, agent_id: str) -> AgentConfig | None: ...

    async def list(self, tenant_id: int) -> list[AgentConfig]: ...

    async def upsert(self, agent: AgentConfig) -> AgentConfig:
        """Insert or replace by (id); built-in overrides are stored under the built-in id per tenant."""
        ...

    async def delete(self, tenant_id: int, agent_id: str) -> bool: ...


@runtime_checkable
class MCPServiceRepo(Protocol):
    async def create(self, service: MCPService) -> MCPService: ...

    async def get(self, tenant_id: int, service_id: str) -> MCPService | None: ...

    async def list(self, tenant_id: int) -> list[MCPService]: ...

    async def update(self, service: MCPService) -> MCPService: ...

    async def delete(self, tenant_id: int, service_id: str) -> bool: ...
