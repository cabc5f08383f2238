"""The MCP tools of one run: services chosen by ``MCPSelectionMode``, each remote tool wrapped (spec §6.7).

A service that is down or answers garbage is skipped with a warning — the run goes on with the other tools.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from knora.adapters.mcp.client import MCPClient, MCPUnavailable, ServerDescription
from knora.adapters.mcp.metadata import MetadataSnapshots, describe_tools
from knora.adapters.mcp.tool import MCPTool
from knora.domain.mcp import MCPService
from knora.netguard import PUBLIC_ONLY, OutboundPolicy
from knora.ports.tool import ApprovalGate, Tool

log = logging.getLogger(__name__)
LIST_TIMEOUT = 30.0


class ServiceLister(Protocol):
    """The part of ``MCPServiceRepo`` the toolset needs."""

    async def list(self, tenant_id: int) -> list[MCPService]: ...


class MCPToolset:
    def __init__(self, repo: ServiceLister, *, stdio_enabled: bool, approval: ApprovalGate | None,
                 approval_timeout: float = 600.0, policy: OutboundPolicy = PUBLIC_ONLY) -> None:
        """``policy``: the tenant outbound policy (services are stored by tenants through the API)."""
        self.repo, self.stdio_enabled, self.policy = repo, stdio_enabled, policy
        self.approval, self.approval_timeout = approval, approval_timeout
        self.metadata = MetadataSnapshots()  # the last directory read from each service (metadata route)

    async def services(self, tenant_id: int, mode: str | None, selected: list[str]) -> list[MCPService]:
        mode = (mode or "all").lower()
        if mode == "none":
            return []
        services = [s for s in await self.repo.list(tenant_id) if s.enabled]
        if mode == "selected":
            services = [s for s in services if s.id in selected]
        return services

    def client(self, service: MCPService) -> MCPClient:
        return MCPClient(service, stdio_enabled=self.stdio_enabled, policy=self.policy)

    async def tools_for(self, service: MCPService) -> list[Tool]:
        client = self.client(service)
        async with asyncio.timeout(LIST_TIMEOUT):
            remote = await client.list_tools()
        approvals = service.tool_approvals or {}
        return [MCPTool(client, r, approval=self.approval, needs_approval=bool(approvals.get(r.name)),
                        approval_timeout=self.approval_timeout) for r in remote]

    async def tools(self, tenant_id: int, mode: str | None, selected: list[str]) -> list[Tool]:
        out: list[Tool] = []
        for service in await self.services(tenant_id, mode, selected):
            try:
                out.extend(await self.tools_for(service))
            except (MCPUnavailable, TimeoutError) as exc:
                log.warning("MCP service %s skipped: %s", service.name, exc)
        return out

    async def probe(self, service: MCPService) -> tuple[bool, str, list[dict[str, object]]]:
        """For the API's test/tools endpoints: (reachable, message, tool descriptions)."""
        try:
            async with asyncio.timeout(LIST_TIMEOUT):
                remote = await self.client(service).list_tools()
        except (MCPUnavailable, TimeoutError) as exc:
            return False, str(exc) or "timed out", []
        tools = describe_tools(service, remote)
        return True, f"connected: {len(tools)} tool(s)", tools

    async def describe(self, service: MCPService) -> ServerDescription:
        """The server's self-description and tools (raises ``MCPUnavailable`` when it cannot be reached)."""
        try:
            async with asyncio.timeout(LIST_TIMEOUT):
                return await self.client(service).describe()
        except TimeoutError as exc:
            raise MCPUnavailable(f"MCP service {service.name} timed out") from exc

