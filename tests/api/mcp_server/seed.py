"""Knowledge for the MCP server tests: two documents in the default tenant, a secret in a second tenant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent

from knora.domain.knowledge import ParseStatus
from knora.root import Services
from tests.polling import eventually

TEA = ("# Tea\n\nOolong tea is partially oxidised before it is rolled and dried. Green tea is not oxidised "
       "at all, while black tea is fully oxidised. Oolong comes mainly from Fujian and Taiwan.")
SOLAR = ("# Solar panels\n\nA typical residential solar panel produces about 400 watts at peak sun. Output "
         "drops on cloudy days and panels slowly degrade, losing about half a percent of output per year.")
SECRET = "# Merger\n\nThe secret merger codename is Bluebird and closes in March."


@dataclass(frozen=True)
class Seeded:
    kb_id: str
    tea_id: str
    solar_id: str
    other_key: str  # the second tenant's API key
    other_kb_id: str
    secret_id: str


async def processed(c: Services, tenant_id: int, knowledge_id: str) -> None:
    async def done() -> bool:
        k = await c.ingest_service.get(tenant_id, knowledge_id)
        return k.parse_status in (ParseStatus.COMPLETED, ParseStatus.FAILED)

    assert await eventually(done)
    k = await c.ingest_service.get(tenant_id, knowledge_id)
    assert k.parse_status == ParseStatus.COMPLETED, k.error_message


async def seed(c: Services) -> Seeded:
    tenant = c.default_tenant_id
    kb = await c.kb_service.create(tenant, {"name": "handbook", "description": "tea and solar notes"})
    tea = await c.ingest_service.add_manual(tenant, kb.id, "Tea", TEA)
    solar = await c.ingest_service.add_manual(tenant, kb.id, "Solar panels", SOLAR)
    other, other_key = await c.tenants.create("other")
    other_kb = await c.kb_service.create(other.id, {"name": "private"})
    secret = await c.ingest_service.add_manual(other.id, other_kb.id, "Merger", SECRET)
    for tid, kid in ((tenant, tea.id), (tenant, solar.id), (other.id, secret.id)):
        await processed(c, tid, kid)
    return Seeded(kb.id, tea.id, solar.id, other_key, other_kb.id, secret.id)


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool call's structured result (the call must have succeeded)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    """A failed tool call's message."""
    assert result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text
