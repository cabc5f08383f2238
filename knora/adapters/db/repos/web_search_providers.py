"""Web search provider configurations, one row each, scoped by tenant (the ``web_search_providers`` table)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.repos._sealed import Sealer
from knora.adapters.db.tables import WebSearchProviderRow
from knora.domain.common import utcnow
from knora.domain.websearch import WebSearchProvider
from knora.ports.secrets import SecretBox


class SqlWebSearchProviderRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], box: SecretBox | None = None) -> None:
        self._sessions = sessions
        self._sealer = Sealer(box, WebSearchProviderRow)  # credentials sealed at rest

    async def create(self, provider: WebSearchProvider) -> WebSearchProvider:
        async with self._sessions.begin() as s:
            s.add(to_row(WebSearchProviderRow, self._sealer.seal(provider)))
        return provider

    async def get(self, tenant_id: int, provider_id: str) -> WebSearchProvider | None:
        async with self._sessions() as s:
            row = await s.get(WebSearchProviderRow, provider_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return self._sealer.open(row_to(WebSearchProvider, row))

    async def list(self, tenant_id: int) -> list[WebSearchProvider]:
        async with self._sessions() as s:
            rows = (await s.execute(select(WebSearchProviderRow)
                                    .where(WebSearchProviderRow.tenant_id == tenant_id)
                                    .order_by(WebSearchProviderRow.created_at))).scalars().all()
            return [self._sealer.open(row_to(WebSearchProvider, r)) for r in rows]

    async def update(self, provider: WebSearchProvider) -> WebSearchProvider:
        provider = provider.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(WebSearchProviderRow, provider.id)
            if row is None or row.tenant_id != provider.tenant_id:
                raise LookupError(provider.id)
            apply(row, self._sealer.seal(provider))
        return provider

    async def delete(self, tenant_id: int, provider_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(WebSearchProviderRow, provider_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            await s.delete(row)
            return True

    async def set_default(self, tenant_id: int, provider_id: str | None) -> None:
        async with self._sessions.begin() as s:
            t = WebSearchProviderRow
            await s.execute(update(t).where(t.tenant_id == tenant_id, t.is_default.is_(True))
                            .values(is_default=False))
            if provider_id is not None:
                await s.execute(update(t).where(t.tenant_id == tenant_id, t.id == provider_id)
                                .values(is_default=True, updated_at=utcnow()))
