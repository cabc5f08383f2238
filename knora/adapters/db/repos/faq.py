"""FAQ entries of FAQ-type knowledge bases, stored as chunks of type ``faq`` (owned by retrieval).

Every FAQ KB gets one holding document (``knowledges`` row of type ``faq``, parse status completed) unless the
caller names one; an entry's public integer id (WeKnora's "seq id") is the chunk's ``chunk_index``, unique per
KB. The FAQ fields live in the chunk's metadata (spec §9.4), the chunk content is the rendered entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeRow
from knora.domain.common import utcnow
from knora.domain.knowledge import Chunk, ChunkType, Knowledge, ParseStatus


class SqlFaqRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def holder(self, tenant_id: int, kb_id: str, knowledge_id: str | None = None) -> Knowledge:
        """The document FAQ entries of this KB hang off (created on first use)."""
        async with self._sessions.begin() as s:
            q = select(KnowledgeRow).where(KnowledgeRow.knowledge_base_id == kb_id,
                                           KnowledgeRow.tenant_id == tenant_id, KnowledgeRow.type == "faq")
            if knowledge_id:
                q = q.where(KnowledgeRow.id == knowledge_id)
            row = (await s.scalars(q.order_by(KnowledgeRow.created_at).limit(1))).first()
            if row is None:
                k = Knowledge(tenant_id=tenant_id, knowledge_base_id=kb_id, type="faq", title="FAQ",
                              parse_status=ParseStatus.COMPLETED, channel="api", processed_at=utcnow())
                if knowledge_id:
                    k.id = knowledge_id
                s.add(to_row(KnowledgeRow, k))
                return k
            return row_to(Knowledge, row)

    async def next_seq(self, kb_id: str) -> int:
        async with self._sessions() as s:
            top = await s.scalar(select(func.max(ChunkRow.chunk_index)).where(
                ChunkRow.knowledge_base_id == kb_id, ChunkRow.chunk_type == ChunkType.FAQ))
        return int(top or 0) + 1

    async def page(self, tenant_id: int, kb_id: str, *, page: int, page_size: int, keyword: str = "",
                   tag_id: str | None = None) -> tuple[list[Chunk], int]:
        conds: list[Any] = [ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_base_id == kb_id,
                            ChunkRow.chunk_type == ChunkType.FAQ]
        if keyword:
            conds.append(ChunkRow.content.contains(keyword))
        if tag_id:
            conds.append(ChunkRow.tag_id == tag_id)
        async with self._sessions() as s:
            total = await s.scalar(select(func.count()).select_from(ChunkRow).where(*conds))
            rows = await s.scalars(select(ChunkRow).where(*conds).order_by(ChunkRow.chunk_index)
                                   .offset((page - 1) * page_size).limit(page_size))
            return [row_to(Chunk, r) for r in rows], int(total or 0)

    async def all(self, tenant_id: int, kb_id: str) -> list[Chunk]:
        async with self._sessions() as s:
            rows = await s.scalars(select(ChunkRow).where(
                ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_base_id == kb_id,
                ChunkRow.chunk_type == ChunkType.FAQ).order_by(ChunkRow.chunk_index))
            return [row_to(Chunk, r) for r in rows]

    async def get(self, tenant_id: int, kb_id: str, seq_id: int) -> Chunk | None:
        async with self._sessions() as s:
            row = (await s.scalars(select(ChunkRow).where(
                ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_base_id == kb_id,
                ChunkRow.chunk_type == ChunkType.FAQ, ChunkRow.chunk_index == seq_id))).first()
            return row_to(Chunk, row) if row else None

    async def save(self, chunks: Sequence[Chunk]) -> None:
        """Insert or update entries (by chunk id) in one transaction."""
        async with self._sessions.begin() as s:
            for c in chunks:
                row = await s.get(ChunkRow, c.id)
                if row is None:
                    s.add(to_row(ChunkRow, c))
                else:
                    apply(row, c.model_copy(update={"updated_at": utcnow()}))

    async def delete(self, tenant_id: int, kb_id: str, seq_ids: Sequence[int] | None) -> list[str]:
        """Delete the given entries (all of the KB's when ``seq_ids`` is None); returns their chunk ids."""
        conds: list[Any] = [ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_base_id == kb_id,
                            ChunkRow.chunk_type == ChunkType.FAQ]
        if seq_ids is not None:
            conds.append(ChunkRow.chunk_index.in_(list(seq_ids)))
        async with self._sessions.begin() as s:
            ids = list((await s.scalars(select(ChunkRow.id).where(*conds))).all())
            if ids:
                await s.execute(delete(ChunkRow).where(ChunkRow.id.in_(ids)))
            return ids
