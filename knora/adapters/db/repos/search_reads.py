"""SQLAlchemy implementation of :class:`knora.ports.search_store.SearchStore` (read-only; owned by retrieval).

Batched ``IN`` queries (chunks of 500 ids) so hydrating a 500-hit result costs one or two round trips per table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import row_to, select_columns, values_to
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow, TagRow, TenantRow
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase

_BATCH = 500
# Column-only selects: hydration reads hundreds of rows per search, and building ORM objects for them cost more
# than the queries themselves.
_CHUNK_COLS = select_columns(Chunk, ChunkRow)
_KNOWLEDGE_COLS = select_columns(Knowledge, KnowledgeRow)
_KNOWLEDGE_ID_AT = [c.key for c in _KNOWLEDGE_COLS].index("id")


def _batches(ids: Sequence[Any]) -> list[list[Any]]:
    uniq = list(dict.fromkeys(i for i in ids if i is not None and i != ""))
    return [uniq[i : i + _BATCH] for i in range(0, len(uniq), _BATCH)]


class SqlSearchReads:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]:
        out: dict[str, KnowledgeBase] = {}
        async with self._sessions() as s:
            for part in _batches(kb_ids):
                for row in (await s.scalars(select(KnowledgeBaseRow).where(KnowledgeBaseRow.id.in_(part)))).all():
                    values = {c: getattr(row, c) for c in ("indexing_strategy", "retrieval_config", "chunking_config")}
                    for k, v in values.items():
                        if not isinstance(v, dict):
                            setattr(row, k, {})
                    out[row.id] = row_to(KnowledgeBase, row)
        return [out[i] for i in dict.fromkeys(kb_ids) if i in out]

    async def tenant_retrieval_config(self, tenant_id: int) -> dict[str, Any]:
        async with self._sessions() as s:
            value = await s.scalar(select(TenantRow.retrieval_config).where(TenantRow.id == tenant_id))
        return dict(value) if isinstance(value, dict) else {}

    async def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return await self._by_ids(Chunk, ChunkRow, _CHUNK_COLS, chunk_ids)

    async def knowledge(self, knowledge_ids: Sequence[str]) -> list[Knowledge]:
        return await self._by_ids(Knowledge, KnowledgeRow, _KNOWLEDGE_COLS, knowledge_ids)

    async def _by_ids(self, record: type[Any], row: Any, cols: Any, ids: Sequence[str]) -> list[Any]:
        """Plain-column reads by primary key, in batches (hydration is on the search hot path)."""
        out: list[Any] = []
        async with self._sessions() as s:
            for part in _batches(ids):
                rows = await s.execute(select(*cols).where(row.id.in_(part)))
                out.extend(values_to(record, row, r) for r in rows)
        return out

    async def chunks_with_knowledge(self, chunk_ids: Sequence[str]) -> tuple[list[Chunk], list[Knowledge]]:
        """The chunks and their documents in one query (a left join: a chunk whose document is gone still comes
        back, without it) — hydration's two reads in one round trip."""
        chunks: list[Chunk] = []
        docs: dict[str, Knowledge] = {}
        n = len(_CHUNK_COLS)
        async with self._sessions() as s:
            for part in _batches(chunk_ids):
                rows = await s.execute(select(*_CHUNK_COLS, *_KNOWLEDGE_COLS)
                                       .outerjoin(KnowledgeRow, KnowledgeRow.id == ChunkRow.knowledge_id)
                                       .where(ChunkRow.id.in_(part)))
                for r in rows:
                    chunk = values_to(Chunk, ChunkRow, r[:n])
                    chunks.append(chunk)
                    if r[n + _KNOWLEDGE_ID_AT] is not None and chunk.knowledge_id not in docs:
                        docs[chunk.knowledge_id] = values_to(Knowledge, KnowledgeRow, r[n:])
        return chunks, list(docs.values())

    async def knowledge_ids_with_tags(self, kb_id: str, tag_ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        async with self._sessions() as s:
            for part in _batches(tag_ids):
                out.extend((await s.scalars(select(KnowledgeRow.id).where(
                    KnowledgeRow.knowledge_base_id == kb_id, KnowledgeRow.tag_id.in_(part)))).all())
        return out

    async def tag_kbs(self, tag_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        async with self._sessions() as s:
            for part in _batches(tag_ids):
                for tid, kb in (await s.execute(select(TagRow.id, TagRow.knowledge_base_id)
                                                .where(TagRow.id.in_(part)))).all():
                    out[tid] = kb
        return out
