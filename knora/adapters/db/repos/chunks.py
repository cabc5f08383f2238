"""Chunks of a document. A re-parse swaps all of a document's chunks in one transaction."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from knora.adapters.db.repos._mapping import SessionFactory, apply, clamp_page, row_to, row_values
from knora.adapters.db.tables import ChunkRow, KnowledgeRow
from knora.domain.common import utcnow
from knora.domain.knowledge import Chunk, ParseStatus
from knora.ports.store import Page

_INSERT_BATCH = 500


class SqlChunkRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def replace_for_knowledge(self, knowledge_id: str, chunks: Sequence[Chunk],
                                    *, complete: dict[str, Any] | None = None) -> list[str] | None:
        return (await self.replace_many([(knowledge_id, chunks, complete)]))[knowledge_id]

    async def replace_many(self, items: Sequence[tuple[str, Sequence[Chunk], dict[str, Any] | None]]
                           ) -> dict[str, list[str] | None]:
        """Several documents' swaps in ONE transaction (ingestion commits documents in groups: one commit,
        one fsync, one write lock for many documents). Missing documents map to None and are left alone."""
        out: dict[str, list[str] | None] = {}
        async with self._sessions.begin() as s:
            ids = [kid for kid, _, _ in items]
            # Lock the document rows first (FOR UPDATE is a no-op on SQLite, whose writers are serialised
            # anyway), so a concurrent delete either happens before (we see it gone) or waits for this commit.
            locked = await s.execute(select(KnowledgeRow.id, KnowledgeRow.parse_status)
                                     .where(KnowledgeRow.id.in_(ids)).with_for_update())
            # A parse that completes a document cancelled meanwhile (cancel-parse, maybe on another replica)
            # is dropped as if the document were gone: the cancel stands.
            completing = {kid for kid, _, complete in items if complete is not None}
            present = {kid for kid, status in locked
                       if not (kid in completing and status == str(ParseStatus.CANCELLED))}
            live = [kid for kid in ids if kid in present]
            old: dict[str, list[str]] = {kid: [] for kid in live}
            if live:
                for cid, kid in await s.execute(select(ChunkRow.id, ChunkRow.knowledge_id)
                                                .where(ChunkRow.knowledge_id.in_(live))):
                    old[kid].append(cid)
                await s.execute(delete(ChunkRow).where(ChunkRow.knowledge_id.in_(live)))
            values = [row_values(ChunkRow, c) for kid, chunks, _ in items if kid in present for c in chunks]
            for start in range(0, len(values), _INSERT_BATCH):
                await s.execute(insert(ChunkRow), values[start:start + _INSERT_BATCH])
            now = utcnow()
            for kid, _, complete in items:
                if kid in present and complete is not None:
                    fields = {("metadata_" if k == "metadata" else k): v for k, v in complete.items()}
                    fields.setdefault("updated_at", now)
                    await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == kid).values(**fields))
            for kid in ids:
                out[kid] = old.get(kid) if kid in present else None
        return out

    async def list(self, tenant_id: int, knowledge_id: str, *, page: int, page_size: int,
                   chunk_types: Sequence[str] | None = None) -> Page:
        page, page_size = clamp_page(page, page_size)
        conds: list[Any] = [ChunkRow.tenant_id == tenant_id, ChunkRow.knowledge_id == knowledge_id]
        if chunk_types:
            conds.append(ChunkRow.chunk_type.in_(list(chunk_types)))
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(ChunkRow).where(*conds))).scalar_one()
            rows = (await s.execute(select(ChunkRow).where(*conds).order_by(ChunkRow.chunk_index, ChunkRow.id)
                                    .offset((page - 1) * page_size).limit(page_size))).scalars().all()
            return Page(items=[row_to(Chunk, r) for r in rows], total=int(total))

    async def get(self, tenant_id: int, chunk_id: str) -> Chunk | None:
        async with self._sessions() as s:
            row = await s.get(ChunkRow, chunk_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return row_to(Chunk, row)

    async def update(self, chunk: Chunk) -> Chunk:
        chunk = chunk.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(ChunkRow, chunk.id)
            if row is None:
                raise LookupError(chunk.id)
            apply(row, chunk)
        return chunk

    async def delete(self, tenant_id: int, chunk_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(ChunkRow, chunk_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            # Keep the pre/next chain whole around the removed chunk.
            if row.pre_chunk_id:
                await s.execute(update(ChunkRow).where(ChunkRow.id == row.pre_chunk_id)
                                .values(next_chunk_id=row.next_chunk_id))
            if row.next_chunk_id:
                await s.execute(update(ChunkRow).where(ChunkRow.id == row.next_chunk_id)
                                .values(pre_chunk_id=row.pre_chunk_id))
            await s.delete(row)
        return True

    async def ids_for_knowledge(self, knowledge_id: str) -> builtins.list[str]:
        async with self._sessions() as s:
            return [r[0] for r in await s.execute(
                select(ChunkRow.id).where(ChunkRow.knowledge_id == knowledge_id))]
