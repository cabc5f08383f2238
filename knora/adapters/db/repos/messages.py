"""Messages of a session (spec §7.2 ordering): chronological, the user message first at equal timestamps.

What every chat turn does here goes through ``_batch``: creating its message pair and completing it are group
commits (the pair inserts of a thousand turns in flight are one ``executemany`` in one transaction), and the
history load (``recent`` without ``before``) and ``get`` are coalesced reads — one query for all turns
waiting. Each caller still awaits its own write being committed, and reads what was committed before it asked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, case, delete, func, insert, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.sql import Executable

from knora.adapters.db.repos._batch import BatchLoader, GroupCommit, Write
from knora.adapters.db.repos._mapping import (
    apply,
    aware,
    contains_ci,
    row_to,
    row_values,
    select_columns,
    to_row,
    values_to,
)
from knora.adapters.db.repos.sessions import seen_by
from knora.adapters.db.tables import INCOMPLETE_TURN, MessageRow, SessionRow
from knora.domain.common import utcnow
from knora.domain.conversation import HistoryMessage, Message, Viewer

_MESSAGES = cast(Table, MessageRow.__table__)
_SESSIONS = cast(Table, SessionRow.__table__)
_INSERT = insert(_MESSAGES)


@cache
def _update_message(keys: tuple[str, ...]) -> Executable:
    return update(_MESSAGES).where(_MESSAGES.c.id == bindparam("_id")).values(
        {k: bindparam(f"v_{k}") for k in keys})


@cache
def _update_session(keys: tuple[str, ...]) -> Executable:
    return update(_SESSIONS).where(_SESSIONS.c.id == bindparam("_id"),
                                   _SESSIONS.c.tenant_id == bindparam("_tenant")).values(
        {k: bindparam(f"v_{k}") for k in keys})


def message_update(message_id: str, fields: dict[str, Any]) -> Write:
    keys = tuple(sorted(fields))
    return Write(f"messages.update:{','.join(keys)}", _update_message(keys),
                 {"_id": message_id, **{f"v_{k}": v for k, v in fields.items()}}, (f"m:{message_id}",))


def session_update(tenant_id: int, session_id: str, fields: dict[str, Any]) -> Write:
    keys = tuple(sorted(fields))
    return Write(f"sessions.update:{','.join(keys)}", _update_session(keys),
                 {"_id": session_id, "_tenant": tenant_id, **{f"v_{k}": v for k, v in fields.items()}},
                 (f"s:{session_id}",))


# Newest first for LIMIT, then reversed: at equal times the assistant sorts "newer" than its user message.
_ROLE_RANK = case((MessageRow.role == "user", 0), else_=1)
_NEWEST_FIRST = (MessageRow.created_at.desc(), _ROLE_RANK.desc(), MessageRow.id.desc())
_COLUMNS = select_columns(Message, MessageRow)
# What a turn's history reads: no agent steps, debug or rendered content to decode for every turn.
_HISTORY_COLUMNS = (MessageRow.session_id, MessageRow.request_id, MessageRow.role, MessageRow.content,
                    MessageRow.images, MessageRow.knowledge_references, MessageRow.created_at)


def _last_of_sessions(columns: Any, session_ids: list[str], limit: int,
                      skip_requests: list[tuple[str, str]] | None = None) -> Select[Any]:
    """The last ``limit`` messages of each session, each session's oldest first (a window function). With
    ``skip_requests`` ((session, request id) pairs), those and messages without a request id are left out of
    the result, though they still count among the last ``limit``."""
    rn = func.row_number().over(partition_by=MessageRow.session_id, order_by=_NEWEST_FIRST)
    ranked = select(*columns, rn.label("rn")).where(MessageRow.session_id.in_(session_ids)).subquery()
    where = [ranked.c.rn <= limit]
    if skip_requests is not None:
        where += [ranked.c.request_id != "",
                  tuple_(ranked.c.session_id, ranked.c.request_id).not_in(skip_requests)]
    return (select(*(ranked.c[c.key] for c in columns)).where(*where)
            .order_by(ranked.c.session_id, ranked.c.rn.desc()))


class SqlMessageRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], writer: GroupCommit | None = None) -> None:
        self._sessions = sessions
        self._own_writer = writer is None
        self._writes = writer if writer is not None else GroupCommit(sessions)
        self._by_id: BatchLoader[str, Message] = BatchLoader(self._fetch_by_id)
        self._recent: BatchLoader[tuple[str, int], list[Message]] = BatchLoader(self._fetch_recent)
        self._history: BatchLoader[tuple[str, int, str],
                                   list[HistoryMessage]] = BatchLoader(self._fetch_history)

    async def close(self) -> None:
        if self._own_writer:
            await self._writes.close()

    async def create(self, message: Message) -> Message:
        async with self._sessions.begin() as s:
            s.add(to_row(MessageRow, message))
        return message

    async def create_pair(self, user: Message, assistant: Message,
                          session_fields: dict[str, Any] | None = None) -> None:
        writes = [Write("messages.insert", _INSERT, row_values(MessageRow, m), (f"m:{m.id}",))
                  for m in (user, assistant)]
        if session_fields:
            writes.append(session_update(user.tenant_id, user.session_id,
                                         {**session_fields, "updated_at": utcnow()}))
        await self._writes.write(writes)

    async def complete(self, message_id: str, fields: dict[str, Any], *, user_message_id: str = "",
                       user_fields: dict[str, Any] | None = None) -> None:
        """Ends a turn: the assistant row (and optionally its user row) in one transaction."""
        now = utcnow()
        writes = [message_update(message_id, {**fields, "updated_at": now})]
        if user_message_id and user_fields:
            writes.append(message_update(user_message_id, {**user_fields, "updated_at": now}))
        await self._writes.write(writes)

    async def _fetch_by_id(self, ids: list[str]) -> dict[str, Message]:
        async with self._sessions() as s:
            rows = (await s.execute(select(*_COLUMNS).where(MessageRow.id.in_(ids)))).all()
        return {m.id: m for m in (values_to(Message, MessageRow, r) for r in rows)}

    async def _fetch_recent(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], list[Message]]:
        """The last ``limit`` messages of many sessions in one query per distinct limit."""
        by_limit: dict[int, list[str]] = defaultdict(list)
        for session_id, limit in keys:
            by_limit[limit].append(session_id)
        out: dict[tuple[str, int], list[Message]] = {k: [] for k in keys}
        async with self._sessions() as s:
            for limit, session_ids in by_limit.items():
                if limit <= 0:
                    continue
                for r in (await s.execute(_last_of_sessions(_COLUMNS, session_ids, limit))).all():
                    m = values_to(Message, MessageRow, r)
                    out[(m.session_id, limit)].append(m)
        return out

    async def _fetch_history(self, keys: list[tuple[str, int, str]]
                             ) -> dict[tuple[str, int, str], list[HistoryMessage]]:
        """``history`` of many sessions: one query per distinct limit, each excluding its turns' own requests
        (a session asked for with two different exclusions at once goes to a second query)."""
        queries: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
        asked: dict[tuple[str, int], int] = defaultdict(int)
        for session_id, limit, exclude in keys:
            if limit > 0:
                queries[(limit, asked[(session_id, limit)])].append((session_id, exclude))
                asked[(session_id, limit)] += 1
        out: dict[tuple[str, int, str], list[HistoryMessage]] = {k: [] for k in keys}
        async with self._sessions() as s:
            for (limit, _), targets in queries.items():
                into = {session_id: out[(session_id, limit, exclude)] for session_id, exclude in targets}
                statement = _last_of_sessions(_HISTORY_COLUMNS, list(into), limit, targets)
                for r in (await s.execute(statement)).all():
                    into[r[0]].append(HistoryMessage(r[1], r[2], r[3], r[4], r[5], aware(r[6])))
        return out

    async def get(self, tenant_id: int, message_id: str) -> Message | None:
        message = await self._by_id.load(message_id)
        return message if message is not None and message.tenant_id == tenant_id else None

    async def update(self, message: Message) -> Message:
        message = message.model_copy(update={"updated_at": utcnow()})
        async with self._sessions.begin() as s:
            row = await s.get(MessageRow, message.id)
            if row is None:
                raise LookupError(message.id)
            apply(row, message)
        return message

    async def update_fields(self, message_id: str, **fields: Any) -> bool:
        fields.setdefault("updated_at", utcnow())
        async with self._sessions.begin() as s:
            res = await s.execute(update(MessageRow).where(MessageRow.id == message_id).values(**fields))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def recent(self, session_id: str, limit: int, before: datetime | None = None) -> list[Message]:
        if before is None:  # the history load of every turn: coalesced with the other turns' loads
            return list(await self._recent.load((session_id, max(limit, 0))) or [])
        async with self._sessions() as s:
            rows = (await s.execute(
                select(MessageRow).where(MessageRow.session_id == session_id, MessageRow.created_at < before)
                .order_by(*_NEWEST_FIRST).limit(max(limit, 0)))).scalars().all()
            return [row_to(Message, r) for r in reversed(rows)]

    async def history(self, session_id: str, limit: int,
                      exclude_request_id: str = "") -> list[HistoryMessage]:
        return list(await self._history.load((session_id, max(limit, 0), exclude_request_id)) or [])

    async def search(self, tenant_id: int, terms: Sequence[str], *, session_ids: Sequence[str] = (),
                     limit: int = 200, viewer: Viewer | None = None) -> list[tuple[Message, str]]:
        """The tenant's completed messages containing every term (as literal text, case-insensitively), newest
        first, each with its session's title."""
        cond = [MessageRow.tenant_id == tenant_id, MessageRow.is_completed.is_(True),
                *(contains_ci(MessageRow.content, t) for t in terms)]
        if session_ids:
            cond.append(MessageRow.session_id.in_(list(session_ids)))
        cond += seen_by(viewer)
        async with self._sessions() as s:
            rows = (await s.execute(select(MessageRow, SessionRow.title)
                                    .join(SessionRow, SessionRow.id == MessageRow.session_id)
                                    .where(*cond).order_by(MessageRow.created_at.desc()).limit(limit))).all()
            return [(row_to(Message, m), title or "") for m, title in rows]

    async def by_request(self, session_id: str, request_id: str) -> list[Message]:
        async with self._sessions() as s:
            rows = (await s.execute(select(MessageRow).where(MessageRow.session_id == session_id,
                                                             MessageRow.request_id == request_id)
                                    .order_by(MessageRow.created_at, _ROLE_RANK))).scalars().all()
            return [row_to(Message, r) for r in rows]

    async def delete(self, session_id: str, message_id: str) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(delete(MessageRow).where(MessageRow.session_id == session_id,
                                                           MessageRow.id == message_id))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def clear(self, session_id: str) -> int:
        async with self._sessions.begin() as s:
            res = await s.execute(delete(MessageRow).where(MessageRow.session_id == session_id))
            return int(res.rowcount)  # type: ignore[attr-defined]

    async def answer_usage(self, tenant_id: int, start: datetime, end: datetime) -> list[tuple[str, Any]]:
        async with self._sessions() as s:
            rows = (await s.execute(select(MessageRow.model_id, MessageRow.debug).where(
                MessageRow.tenant_id == tenant_id, MessageRow.role == "assistant",
                MessageRow.is_completed.is_(True), MessageRow.created_at >= start,
                MessageRow.created_at <= end))).all()
            return [(model_id or "", (debug or {}).get("usage")) for model_id, debug in rows]

    async def incomplete(self, *, older_than: datetime | None = None) -> list[Message]:
        async with self._sessions() as s:
            rows = (await s.execute(incomplete_query(older_than))).scalars().all()
            return [row_to(Message, r) for r in rows]


def incomplete_query(older_than: datetime | None = None) -> Select[MessageRow]:
    """Incomplete assistant messages (the orphan sweep's query, every lease TTL on every replica). Its
    predicate is the partial index ``ix_messages_incomplete``'s, term for term (``INCOMPLETE_TURN``): SQLite
    uses a partial index only when the query's WHERE contains the index's WHERE terms as written."""
    query = select(MessageRow).where(INCOMPLETE_TURN)
    return query if older_than is None else query.where(MessageRow.created_at < older_than)
