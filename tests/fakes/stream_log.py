"""A stream log whose SSE keep-alive clock is driven by the test, not by a wall-clock timer.

``ManualHeartbeatLog`` wraps a real log (appends, reads and stored events go to it unchanged); its ``follow``
records the ``heartbeat`` interval it was asked for, follows the real log without a timer, and yields a
keep-alive (``None``) each time the test calls ``tick()`` — "the interval has elapsed with nothing to send". A
test can then make the connection idle exactly when it wants to, however slow the machine is. The timer itself
is covered by the stream-log contract tests (tests/adapters/stream).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from knora.domain.stream import StreamEvent


class ManualHeartbeatLog:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.heartbeats: list[float | None] = []  # the interval each follow() was asked for
        self._ticks: asyncio.Queue[None] = asyncio.Queue()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def tick(self) -> None:
        """The keep-alive interval elapses once: a waiting follower yields one ``None``."""
        self._ticks.put_nowait(None)

    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int:
        return int(await self.inner.append(session_id, message_id, event))

    async def read(self, session_id: str, message_id: str, after: int = -1) -> list[StreamEvent]:
        return list(await self.inner.read(session_id, message_id, after))

    async def follow(self, session_id: str, message_id: str, after: int = -1,
                     heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        self.heartbeats.append(heartbeat)
        events = self.inner.follow(session_id, message_id, after).__aiter__()
        nxt: asyncio.Future[Any] = asyncio.ensure_future(anext(events))
        tick: asyncio.Future[Any] | None = None
        try:
            while True:
                if heartbeat is not None and tick is None:
                    tick = asyncio.ensure_future(self._ticks.get())
                waiting = {nxt} if tick is None else {nxt, tick}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if nxt in done:
                    try:
                        item = nxt.result()
                    except StopAsyncIteration:
                        return
                    yield item
                    nxt = asyncio.ensure_future(anext(events))
                elif tick is not None and tick in done:
                    tick = None
                    yield None
        finally:
            for fut in (nxt, tick):
                if fut is not None and not fut.done():
                    fut.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await fut
            await events.aclose()
