"""Chat sessions (spec §7.1, §7.6) on SessionRow; deleting a session deletes its messages in the same
transaction.

``get`` (the lookup every chat turn starts with) is a coalesced read and ``set_title_if_empty`` (the title
every first turn saves) a group-commit write, shared with the message repository's writer (see ``_batch``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._batch import BatchLoader, GroupCommit
from knora.adapters.db.repos._mapping import apply, contains_ci, row_to, select_columns, to_row, values_to
from knora.adapters.db.tables import MessageRow, SessionRow
from knora.domain.common import utcnow
from knora.domain.conversation import Session, Viewer

_COLUMNS = select_columns(Session, SessionRow)


def seen_by(viewer: Viewer | None) -> list[ColumnElement[bool]]:
    """The SQL side of ``Viewer.sees`` (no condition without a viewer: the service's own reads)."""
    if viewer is None:
        return []
    unowned = [SessionRow.user_id == "", SessionRow.user_id.like("system-%")]
    own = [SessionRow.user_id == viewer.user_id] if viewer.user_id is not None else []
    return [or_(*unowned, *own)]


class SqlSessionRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], writer: GroupCommit | None = None) -> None:
        self._sessions = sessions
        self._writes = writer
        self._by_id: BatchLoader[str, Session] = BatchLoader(self._fetch_by_id)

    async def _fetch_by_id(self, ids: list[str]) -> dict[str, Session]:
        async with self._sessions() as s:
            rows = (await s.execute(select(*_COLUMNS).where(SessionRow.id.in_(ids)))).all()
        return {r.id: r for r in (values_to(Session, SessionRow, row) for row in rows)}

    async def create(self, session: Session) -> Session:
        async with self._sessions.begin() as s:
            s.add(to_row(SessionRow, session))
        return session

    async def get(self, tenant_id: int, session_id: str) -> Session | None:
        session = await self._by_id.load(session_id)
        return session if session is not None and session.tenant_id == tenant_id else None

    async def list(self, tenant_id: int, *, page: int, page_size: int, keyword: str | None = None,
                   source: str | None = None, agent_id: str | None = None,
                   viewer: Viewer | None = None) -> tuple[list[Session], int]:
        cond = [SessionRow.tenant_id == tenant_id, *seen_by(viewer)]
        if keyword:
            cond.append(contains_ci(SessionRow.title, keyword))
        if source:
            cond.append(SessionRow.source == source)
        if agent_id:
            cond.append(SessionRow.agent_id == agent_id)
        async with self._sessions() as s:
            total = (await s.execute(select(func.count()).select_from(SessionRow).where(*cond))).scalar_one()
            rows = (await s.execute(
                select(SessionRow).where(*cond)
                .order_by(SessionRow.is_pinned.desc(), SessionRow.pinned_at.desc(),
                          SessionRow.updated_at.desc(),
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
            res = await s.execute(update(SessionRow)
                                  .where(SessionRow.id == session_id, SessionRow.tenant_id == tenant_id)
                                  .values(**fields))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def set_title_if_empty(self, tenant_id: int, session_id: str, title: str) -> bool:
        statement = (update(SessionRow).where(SessionRow.id == session_id, SessionRow.tenant_id == tenant_id,
                                              SessionRow.title == "").values(title=title,
                                                                             updated_at=utcnow()))

        async def op(s: AsyncSession) -> bool:
            return bool((await s.execute(statement)).rowcount)  # type: ignore[attr-defined]

        if self._writes is not None:
            return bool(await self._writes.run(op))
        async with self._sessions.begin() as s:
            return await op(s)

    async def delete(self, tenant_id: int, session_ids: Sequence[str], viewer: Viewer | None = None) -> int:
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return 0
        async with self._sessions.begin() as s:
            owned = (await s.execute(select(SessionRow.id).where(
                SessionRow.tenant_id == tenant_id, SessionRow.id.in_(ids), *seen_by(viewer)))).scalars().all()
            if not owned:
                return 0
            await s.execute(delete(MessageRow).where(MessageRow.session_id.in_(owned)))
            await s.execute(delete(SessionRow).where(SessionRow.id.in_(owned)))
            return len(owned)

    async def delete_all(self, tenant_id: int, viewer: Viewer | None = None) -> int:
        async with self._sessions.begin() as s:
            owned = (await s.execute(select(SessionRow.id).where(
                SessionRow.tenant_id == tenant_id, *seen_by(viewer)))).scalars().all()
            if not owned:
                return 0
            await s.execute(delete(MessageRow).where(MessageRow.session_id.in_(owned)))
            await s.execute(delete(SessionRow).where(SessionRow.id.in_(owned)))
            return len(owned)
