"""Which blob store each knowledge base is bound to (``storage_provider_config.provider``), across tenants:
what ``knora blobs migrate`` reads and changes, and what ``knora serve`` checks before several replicas start.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from knora.adapters.db.repos._mapping import SessionFactory
from knora.adapters.db.tables import KnowledgeBaseRow, KnowledgeRow
from knora.domain.common import utcnow

UNBOUND = "local"  # a row with no provider was stored before bindings existed: its files are local


@dataclass(frozen=True)
class BoundKnowledgeBase:
    id: str
    tenant_id: int
    name: str
    provider: str


def _provider(config: object) -> str:
    named = config.get("provider") if isinstance(config, dict) else None
    return str(named).strip().lower() if named else UNBOUND


class SqlBlobBindings:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def knowledge_bases(self) -> list[BoundKnowledgeBase]:
        """Every knowledge base of every tenant with the store it is bound to, oldest first."""
        async with self._sessions() as s:
            rows = (await s.execute(
                select(KnowledgeBaseRow.id, KnowledgeBaseRow.tenant_id, KnowledgeBaseRow.name,
                       KnowledgeBaseRow.storage_provider_config)
                .order_by(KnowledgeBaseRow.created_at, KnowledgeBaseRow.id))).all()
        return [BoundKnowledgeBase(r[0], r[1], r[2], _provider(r[3])) for r in rows]

    async def bound_elsewhere(self, provider: str) -> dict[str, int]:
        """How many knowledge bases are bound to each store other than ``provider``. Safe on a database not
        migrated yet (``knora serve`` asks before it migrates): no table yet is none; a table from before
        bindings existed (migration 0003) holds local ones only."""
        try:
            bound = await self.knowledge_bases()
        except DBAPIError:
            try:
                async with self._sessions() as s:
                    count = (await s.execute(select(func.count()).select_from(KnowledgeBaseRow.__table__)
                                             )).scalar_one()
            except DBAPIError:
                return {}
            return {UNBOUND: int(count)} if count and provider != UNBOUND else {}
        counts: dict[str, int] = {}
        for kb in bound:
            if kb.provider != provider:
                counts[kb.provider] = counts.get(kb.provider, 0) + 1
        return counts

    async def file_paths(self, kb_id: str) -> list[str]:
        """The blob keys of the knowledge base's documents' originals (``knowledges.file_path``)."""
        async with self._sessions() as s:
            rows = (await s.execute(select(KnowledgeRow.file_path)
                                    .where(KnowledgeRow.knowledge_base_id == kb_id,
                                           KnowledgeRow.file_path != ""))).scalars().all()
        return sorted(set(rows))

    async def rebind(self, kb_id: str, *, source: str, provider: str, backend_id: str) -> bool:
        """Binds the knowledge base to ``provider`` if it is still bound to ``source`` (False otherwise: it
        was deleted, or changed meanwhile)."""
        async with self._sessions.begin() as s:
            row = await s.get(KnowledgeBaseRow, kb_id, with_for_update=True)
            if row is None or _provider(row.storage_provider_config) != source:
                return False
            row.storage_provider_config = {"provider": provider}
            row.storage_backend_id = backend_id
            row.updated_at = utcnow()
        return True
