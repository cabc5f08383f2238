"""MCP service configurations, one row each, scoped by tenant."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.repos._sealed import Sealer
from knora.adapters.db.tables import MCPServiceRow
from knora.domain.common import utcnow
from knora.domain.mcp import MCPService
from knora.ports.secrets import SecretBox


class SqlMCPServiceRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], box: SecretBox | None = None) -> None:
        self._sessions = sessions
        # credentials sealed at rest
        self._sealer = Sealer(box, MCPServiceRow)

    async def create(self, service: MCPService) -> MCPService:
        async with self._sessions.begin() as s:
            s.add(to_row(MCPServiceRow, self._sealer.seal(service)))
        return service

    async def get(self, tenant_id: int, service_id: str) -> MCPService | None:
        async with self._sessions() as s:
            row = await s.get(MCPServiceRow, service_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return self._sealer.open(row_to(MCPService, row))

    async def list(self, tenant_id: int) -> list[MCPService]:
        async with self._sessions() as s:
            rows = (await s.execute(select(MCPServiceRow).where(MCPServiceRow.tenant_id == tenant_id)
                                    .order_by(MCPServiceRow.created_at))).scalars().all()
            return [self._sealer.open(row_to(MCPService, r)) for r in rows]

    async def update(self, service: MCPService) -> MCPService:
        service = service.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(MCPServiceRow, service.id)
            if row is None or row.tenant_id != service.tenant_id:
                raise LookupError(service.id)
            apply(row, self._sealer.seal(service))
        return service

    async def delete(self, tenant_id: int, service_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(MCPServiceRow, service_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            await s.delete(row)
            return True
