"""Chunk revisions on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

import builtins

from sqlalchemy import delete, select

from knora.adapters.db.repos._mapping import SessionFactory, row_to, to_row
from knora.adapters.db.tables import ChunkRevisionRow
from knora.domain.knowledge import ChunkRevision


class SqlChunkRevisionRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def add(self, rev: ChunkRevision) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(ChunkRevisionRow).where(ChunkRevisionRow.chunk_id == rev.chunk_id,
                                                           ChunkRevisionRow.revision == rev.revision))
            s.add(to_row(ChunkRevisionRow, rev))

    async def list(self, tenant_id: int, chunk_id: str) -> list[ChunkRevision]:
        q = (select(ChunkRevisionRow)
             .where(ChunkRevisionRow.tenant_id == tenant_id, ChunkRevisionRow.chunk_id == chunk_id)
             .order_by(ChunkRevisionRow.revision.desc()))
        async with self._sessions() as s:
            return [row_to(ChunkRevision, r) for r in (await s.execute(q)).scalars().all()]

    async def get(self, tenant_id: int, chunk_id: str, revision: int) -> ChunkRevision | None:
        q = select(ChunkRevisionRow).where(ChunkRevisionRow.tenant_id == tenant_id,
                                           ChunkRevisionRow.chunk_id == chunk_id,
                                           ChunkRevisionRow.revision == revision)
        async with self._sessions() as s:
            row = (await s.execute(q)).scalars().first()
            return row_to(ChunkRevision, row) if row is not None else None

    async def for_knowledge(self, tenant_id: int, knowledge_id: str) -> builtins.list[ChunkRevision]:
        q = select(ChunkRevisionRow).where(ChunkRevisionRow.tenant_id == tenant_id,
                                           ChunkRevisionRow.knowledge_id == knowledge_id)
        async with self._sessions() as s:
            return [row_to(ChunkRevision, r) for r in (await s.execute(q)).scalars().all()]
