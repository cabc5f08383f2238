"""Chat sessions (spec §7.1, §7.6) on SessionRow; deleting a session deletes its messages in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.tables import MessageRow, SessionRow
from knora.domain.common import utcnow
from knora.domain.conversation import Session


class SqlSessionRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def create(self, session: Session) -> Session:
        async with self._sessions.begin() as s:
            s.add(to_row(SessionRow, session))
        return session

    async def get(self, tenant_id: int, session_id: str) -> Session | None:
        async with self._sessions() as s:
            row = await s.get(SessionRow, session_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return row_to(Session, row)

    async def list(self, tenant_id: int, *, page: int, page_size: int, keyword: str | None = None,
                   source: str | None = None, agent_id: str | None = None) -> tuple[list[Session], int]:
        cond = [SessionRow.tenant_id == tenant_id]
        if keyword:
            escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            cond.append(func.lower(SessionRow.title).like(f"%{escaped.lower()}%", escape="\\"))
        if source:
            cond.append(SessionRow.source == source)
        if agent_id:
            cond.append(SessionRow.agent_id == agent_id)
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(SessionRow).where(*cond))).scalar_one()
            rows = (await s.execute(
                select(SessionRow).where(*cond)
                .order_by(SessionRow.is_pinned.desc(), SessionRow.pinned_at.desc(), SessionRow.updated_at.desc(),
                          SessionRow.id)
                .offset((page - 1) * page_size).limit(page_size))).scalars().all()
            return [row_to(Session, r) for r in rows], int(total)

    async def update(self, session: Session) -> Session:
        session = session.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(SessionRow, session.id)
            if row is None or row.tenant_id != session.tenant_id:
                raise LookupError(session.id)
            apply(row, session)
        return session

    async def update_fields(self, tenant_id: int, session_id: str, **fields: Any) -> bool:
        fields.setdefault("updated_at", utcnow())
        async with self._sessions.begin() as s:
            res = await s.execute(update(SessionRow).where(SessionRow.id == session_id,
                                                           SessionRow.tenant_id == tenant_id).values(**fields))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def set_title_if_empty(self, tenant_id: int, session_id: str, title: str) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(update(SessionRow).where(
                SessionRow.id == session_id, SessionRow.tenant_id == tenant_id, SessionRow.title == "")
                .values(title=title, updated_at=utcnow()))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def delete(self, tenant_id: int, session_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return 0
        async with self._sessions.begin() as s:
            owned = (await s.execute(select(SessionRow.id).where(SessionRow.tenant_id == tenant_id,
                                                                 SessionRow.id.in_(ids)))).scalars().all()
            if not owned:
                return 0
            await s.execute(delete(MessageRow).where(MessageRow.session_id.in_(owned)))
            await s.execute(delete(SessionRow).where(SessionRow.id.in_(owned)))
            return len(owned)

    async def delete_all(self, tenant_id: int) -> int:
        async with self._sessions.begin() as s:
            owned = (await s.execute(select(SessionRow.id).where(SessionRow.tenant_id == tenant_id))).scalars().all()
            if not owned:
                return 0
            await s.execute(delete(MessageRow).where(MessageRow.session_id.in_(owned)))
            await s.execute(delete(SessionRow).where(SessionRow.id.in_(owned)))
            return len(owned)
