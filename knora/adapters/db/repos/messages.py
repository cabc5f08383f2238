"""Messages of a session (spec §7.2 ordering): chronological, the user message first at equal timestamps.

The two writes every chat turn makes (creating its message pair, completing it) go through a group commit: one
writer task runs all writes queued meanwhile in a single transaction. With a thousand turns in flight this
turns a thousand competing transactions (and a starved connection pool — SQLite serialises writers anyway)
into a few dozen, while each caller still awaits its own write being durable.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.tables import MessageRow, SessionRow
from knora.domain.common import utcnow
from knora.domain.conversation import Message

Op = Callable[[AsyncSession], Awaitable[None]]


class GroupCommit:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], max_batch: int = 200) -> None:
        self._sessions = sessions
        self._max_batch = max_batch
        self._queue: list[tuple[Op, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def run(self, op: Op) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((op, fut))
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = asyncio.create_task(self._writer(), name="knora-message-writer")
        self._wake.set()
        await asyncio.shield(fut)  # a cancelled caller does not cancel a write others share

    async def _writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch, self._queue = self._queue[:self._max_batch], self._queue[self._max_batch:]
                try:
                    async with self._sessions.begin() as s:
                        for op, _ in batch:
                            await op(s)
                except Exception:  # noqa: BLE001 - isolate the failing write, the others still commit
                    for op, fut in batch:
                        try:
                            async with self._sessions.begin() as s:
                                await op(s)
                        except Exception as exc:  # noqa: BLE001 - handed to that write's caller
                            if not fut.done():
                                fut.set_exception(exc)
                        else:
                            if not fut.done():
                                fut.set_result(None)
                else:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_result(None)

    async def close(self) -> None:
        while self._queue and self._task is not None and not self._task.done():
            await asyncio.gather(*(f for _, f in self._queue), return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


# Newest first for LIMIT, then reversed: at equal times the assistant sorts "newer" than its user message.
_ROLE_RANK = case((MessageRow.role == "user", 0), else_=1)


class SqlMessageRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._writes = GroupCommit(sessions)

    async def close(self) -> None:
        await self._writes.close()

    async def create(self, message: Message) -> Message:
        async with self._sessions.begin() as s:
            s.add(to_row(MessageRow, message))
        return message

    async def create_pair(self, user: Message, assistant: Message,
                          session_fields: dict[str, Any] | None = None) -> None:
        rows = [to_row(MessageRow, user), to_row(MessageRow, assistant)]

        async def op(s: AsyncSession) -> None:
            s.add_all(rows)
            await s.flush()
            if session_fields:
                await s.execute(update(SessionRow).where(SessionRow.id == user.session_id,
                                                         SessionRow.tenant_id == user.tenant_id)
                                .values(**session_fields, updated_at=utcnow()))

        await self._writes.run(op)

    async def complete(self, message_id: str, fields: dict[str, Any], *, user_message_id: str = "",
                       user_fields: dict[str, Any] | None = None) -> None:
        """Ends a turn: the assistant row (and optionally its user row) in one transaction."""
        now = utcnow()

        async def op(s: AsyncSession) -> None:
            await s.execute(update(MessageRow).where(MessageRow.id == message_id).values(**fields, updated_at=now))
            if user_message_id and user_fields:
                await s.execute(update(MessageRow).where(MessageRow.id == user_message_id)
                                .values(**user_fields, updated_at=now))

        await self._writes.run(op)

    async def get(self, tenant_id: int, message_id: str) -> Message | None:
        async with self._sessions() as s:
            row = await s.get(MessageRow, message_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            return row_to(Message, row)

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
        cond = [MessageRow.session_id == session_id]
        if before is not None:
            cond.append(MessageRow.created_at < before)
        async with self._sessions() as s:
            rows = (await s.execute(
                select(MessageRow).where(*cond)
                .order_by(MessageRow.created_at.desc(), _ROLE_RANK.desc(), MessageRow.id.desc())
                .limit(max(limit, 0)))).scalars().all()
            return [row_to(Message, r) for r in reversed(rows)]

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

    async def incomplete(self, *, older_than: datetime | None = None) -> list[Message]:
        cond = [MessageRow.is_completed.is_(False), MessageRow.role == "assistant"]
        if older_than is not None:
            cond.append(MessageRow.created_at < older_than)
        async with self._sessions() as s:
            rows = (await s.execute(select(MessageRow).where(*cond))).scalars().all()
            return [row_to(Message, r) for r in rows]
