"""MCPServiceService: the rules the /mcp-services routes rely on, over an in-memory repository."""

from __future__ import annotations

import pytest

from knora.domain.errors import BadRequest, NotFound
from knora.domain.mcp import MCPService
from knora.services.agent.mcp_services import MASK, MCPServiceService, masked


class MemoryRepo:
    def __init__(self) -> None:
        self.rows: dict[str, MCPService] = {}

    async def create(self, service: MCPService) -> MCPService:
        self.rows[service.id] = service
        return service

    async def get(self, tenant_id: int, service_id: str) -> MCPService | None:
        row = self.rows.get(service_id)
        return row if row is not None and row.tenant_id == tenant_id else None

    async def list(self, tenant_id: int) -> list[MCPService]:
        return [r for r in self.rows.values() if r.tenant_id == tenant_id]

    async def update(self, service: MCPService) -> MCPService:
        self.rows[service.id] = service
        return service

    async def delete(self, tenant_id: int, service_id: str) -> bool:
        return self.rows.pop(service_id, None) is not None


SSE = {"name": "tools", "url": "https://tools.test/sse", "auth_config": {"api_key": "secret", "token": ""}}


async def test_a_masked_secret_sent_back_keeps_the_stored_one() -> None:
    service = MCPServiceService(MemoryRepo(), stdio_enabled=False)
    created = await service.create(1, SSE)
    assert masked(created).auth_config == {"api_key": MASK}
    updated = await service.update(1, created.id, {"auth_config": {"api_key": MASK, "token": "new"}})
    assert updated.auth_config == {"api_key": "secret", "token": "new"}


@pytest.mark.parametrize(("body", "message"), [
    ({"url": "https://x.test"}, "name is required"),
    ({"name": "x", "transport_type": "carrier-pigeon"}, "transport_type must be one of"),
    ({"name": "x", "transport_type": "stdio", "stdio_config": {"command": "run"}},
     "stdio MCP services are disabled"),
    ({"name": "x"}, "url (http or https) is required"),
    ({"name": "x", "url": "https://x.test", "headers": "h"}, "headers must be a JSON object"),
])
async def test_invalid_bodies_are_bad_requests(body: dict[str, object], message: str) -> None:
    with pytest.raises(BadRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        await MCPServiceService(MemoryRepo(), stdio_enabled=False).create(1, body)


async def test_stdio_needs_a_command_when_enabled() -> None:
    service = MCPServiceService(MemoryRepo(), stdio_enabled=True)
    with pytest.raises(BadRequest, match="stdio_config.command is required"):
        await service.create(1, {"name": "x", "transport_type": "stdio", "stdio_config": "run"})
    created = await service.create(1, {"name": "x", "transport_type": "stdio",
                                       "stdio_config": {"command": "run"}})
    assert created.transport_type == "stdio"


async def test_another_tenants_service_is_not_found() -> None:
    service = MCPServiceService(MemoryRepo(), stdio_enabled=False)
    created = await service.create(1, SSE)
    with pytest.raises(NotFound):
        await service.get(2, created.id)
    with pytest.raises(NotFound):
        await service.delete(2, "missing")


async def test_tool_approvals_round_trip() -> None:
    service = MCPServiceService(MemoryRepo(), stdio_enabled=False)
    created = await service.create(1, SSE)
    await service.set_tool_approval(1, created.id, "search", True)
    assert await service.tool_approvals(1, created.id) == {"search": True}
