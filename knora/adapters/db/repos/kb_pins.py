"""Pinned knowledge bases on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select

from knora.adapters.db.repos._mapping import SessionFactory
from knora.adapters.db.tables import KnowledgeBasePinRow, KnowledgeBaseRow
from knora.domain.common import utcnow


class SqlKnowledgeBasePinRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def toggle(self, tenant_id: int, kb_id: str) -> tuple[bool, datetime | None] | None:
        async with self._sessions.begin() as s:
            kb = await s.get(KnowledgeBaseRow, kb_id)
            if kb is None or kb.tenant_id != tenant_id:
                return None
            row = await s.get(KnowledgeBasePinRow, kb_id)
            if row is not None:
                await s.delete(row)
                return False, None
            at = utcnow()
            s.add(KnowledgeBasePinRow(knowledge_base_id=kb_id, tenant_id=tenant_id, pinned_at=at))
            return True, at

    async def pinned(self, tenant_id: int, kb_ids: Sequence[str] | None = None) -> dict[str, datetime]:
        q = select(KnowledgeBasePinRow).where(KnowledgeBasePinRow.tenant_id == tenant_id)
        if kb_ids is not None:
            q = q.where(KnowledgeBasePinRow.knowledge_base_id.in_(list(kb_ids)))
        async with self._sessions() as s:
            rows = (await s.execute(q)).scalars().all()
            return {r.knowledge_base_id: r.pinned_at for r in rows}
