"""Tags of a knowledge base, with how many documents and chunks carry each."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update

from knora.adapters.db.repos._mapping import SessionFactory, apply, clamp_page, contains_ci, row_to, to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeRow, TagRow
from knora.domain.common import utcnow
from knora.domain.knowledge import Tag
from knora.ports.store import Page


class SqlTagRepo:
    def __init__(self, sessions: SessionFactory) -> None:
        self._sessions = sessions

    async def create(self, tag: Tag) -> Tag:
        async with self._sessions.begin() as s:
            s.add(to_row(TagRow, tag))
        return tag

    async def get(self, tenant_id: int, tag_id: str) -> Tag | None:
        async with self._sessions() as s:
            row = await s.get(TagRow, tag_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return row_to(Tag, row)

    async def get_by_name(self, kb_id: str, name: str) -> Tag | None:
        async with self._sessions() as s:
            row = (await s.execute(select(TagRow).where(TagRow.knowledge_base_id == kb_id,
                                                        TagRow.name == name)
                                   .limit(1))).scalar_one_or_none()
            return row_to(Tag, row) if row else None

    async def list(self, tenant_id: int, kb_id: str, *, page: int, page_size: int,
                   keyword: str | None = None) -> Page:
        page, page_size = clamp_page(page, page_size)
        conds: list[Any] = [TagRow.tenant_id == tenant_id, TagRow.knowledge_base_id == kb_id]
        if keyword:
            conds.append(contains_ci(TagRow.name, keyword))
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(TagRow).where(*conds))).scalar_one()
            rows = (await s.execute(select(TagRow).where(*conds).order_by(TagRow.sort_order,
                                                                          TagRow.created_at)
                                    .offset((page - 1) * page_size).limit(page_size))).scalars().all()
            tags = [row_to(Tag, r) for r in rows]
            ids = [t.id for t in tags]
            k_counts: dict[str, int] = {}
            c_counts: dict[str, int] = {}
            if ids:
                for tid, n in await s.execute(select(KnowledgeRow.tag_id, func.count())
                                              .where(KnowledgeRow.tag_id.in_(ids)).group_by(KnowledgeRow.tag_id)):
                    k_counts[str(tid)] = int(n)
                for tid, n in await s.execute(select(ChunkRow.tag_id, func.count())
                                              .where(ChunkRow.tag_id.in_(ids)).group_by(ChunkRow.tag_id)):
                    c_counts[str(tid)] = int(n)
        return Page(items=[(t, k_counts.get(t.id, 0), c_counts.get(t.id, 0)) for t in tags], total=int(total))

    async def update(self, tag: Tag) -> Tag:
        tag = tag.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(TagRow, tag.id)
            if row is None:
                raise LookupError(tag.id)
            apply(row, tag)
        return tag

    async def delete(self, tenant_id: int, tag_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(TagRow, tag_id)
            if row is None or row.tenant_id != tenant_id:
                return False
            # Untag what carried it, so no document points at a tag that no longer exists.
            await s.execute(update(KnowledgeRow).where(KnowledgeRow.tag_id == tag_id).values(tag_id=None))
            await s.execute(update(ChunkRow).where(ChunkRow.tag_id == tag_id).values(tag_id=None))
            await s.delete(row)
        return True

    async def usage(self, tag_id: str) -> tuple[int, int]:
        async with self._sessions() as s:
            k = (await s.execute(select(func.count()).select_from(KnowledgeRow)
                                 .where(KnowledgeRow.tag_id == tag_id))).scalar_one()
            c = (await s.execute(select(func.count()).select_from(ChunkRow)
                                 .where(ChunkRow.tag_id == tag_id))).scalar_one()
            return int(k), int(c)
