"""Knowledge bases. Deleting one removes its documents, chunks and tags in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select

from knora.adapters.db.repos._mapping import SessionFactory, apply, row_to, to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow, TagRow
from knora.domain.common import utcnow
from knora.domain.knowledge import KnowledgeBase
from knora.ports.store import KBStats

_BUSY = ("pending", "processing")


class SqlKnowledgeBaseRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def create(self, kb: KnowledgeBase) -> KnowledgeBase:
        async with self._sessions.begin() as s:
            s.add(to_row(KnowledgeBaseRow, kb))
        return kb

    async def get(self, tenant_id: int, kb_id: str) -> KnowledgeBase | None:
        async with self._sessions() as s:
            row = await s.get(KnowledgeBaseRow, kb_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return row_to(KnowledgeBase, row)

    async def get_by_name(self, tenant_id: int, name: str) -> KnowledgeBase | None:
        async with self._sessions() as s:
            row = (await s.execute(
                select(KnowledgeBaseRow).where(KnowledgeBaseRow.tenant_id == tenant_id,
                                               KnowledgeBaseRow.name == name)
                .order_by(KnowledgeBaseRow.created_at).limit(1))).scalar_one_or_none()
            return row_to(KnowledgeBase, row) if row else None

    async def list(self, tenant_id: int) -> list[KnowledgeBase]:
        async with self._sessions() as s:
            rows = (await s.execute(select(KnowledgeBaseRow).where(KnowledgeBaseRow.tenant_id == tenant_id)
                                    .order_by(KnowledgeBaseRow.created_at.desc()))).scalars().all()
            return [row_to(KnowledgeBase, r) for r in rows]

    async def update(self, kb: KnowledgeBase) -> KnowledgeBase:
        kb = kb.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(KnowledgeBaseRow, kb.id)
            if row is None:
                raise LookupError(kb.id)
            apply(row, kb)
        return kb

    async def delete(self, tenant_id: int, kb_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(KnowledgeBaseRow, kb_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            # Explicit deletes: SQLite enforces the cascades too, but this keeps one code path for both
            # databases.
            await s.execute(delete(ChunkRow).where(ChunkRow.knowledge_base_id == kb_id))
            await s.execute(delete(KnowledgeRow).where(KnowledgeRow.knowledge_base_id == kb_id))
            await s.execute(delete(TagRow).where(TagRow.knowledge_base_id == kb_id))
            await s.delete(row)
        return True

    async def stats(self, tenant_id: int, kb_ids: Sequence[str]) -> dict[str, KBStats]:
        out = {kb_id: KBStats() for kb_id in kb_ids}
        if not kb_ids:
            return out
        async with self._sessions() as s:
            k_rows = await s.execute(
                select(KnowledgeRow.knowledge_base_id, KnowledgeRow.parse_status, func.count())
                .where(KnowledgeRow.tenant_id == tenant_id, KnowledgeRow.knowledge_base_id.in_(list(kb_ids)))
                .group_by(KnowledgeRow.knowledge_base_id, KnowledgeRow.parse_status))
            for kb_id, status, n in k_rows:
                out[kb_id].knowledge_count += int(n)
                if status in _BUSY:
                    out[kb_id].processing_count += int(n)
            c_rows = await s.execute(
                select(ChunkRow.knowledge_base_id, func.count())
                .where(ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_base_id.in_(list(kb_ids)))
                .group_by(ChunkRow.knowledge_base_id))
            for kb_id, n in c_rows:
                out[kb_id].chunk_count = int(n)
        return out
