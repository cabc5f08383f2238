"""What both stream logs' followers share: waking on append, and a keep-alive deadline with one timer per
period.

A follower that has caught up parks a future in its stream's :class:`Waiters`; an append resolves it with
``True``. :class:`Heartbeat` resolves it with ``False`` once ``heartbeat`` seconds have passed since the
follower last yielded anything, so the caller can send a keep-alive. The timer is armed once per period and
re-arms itself while events keep flowing, instead of a timeout per wait (which cost a timer per event per
follower).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Waiters:
    """Followers of one stream waiting for its next append."""

    waiting: list[asyncio.Future[bool]] = field(default_factory=list)

    def wake(self) -> None:
        waiting, self.waiting = self.waiting, []
        for fut in waiting:
            if not fut.done():
                fut.set_result(True)

    def __bool__(self) -> bool:
        return bool(self.waiting)


class Heartbeat:
    """One follower's wait for the next append or its keep-alive deadline."""

    def __init__(self, heartbeat: float | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._heartbeat = heartbeat
        self._waiter: asyncio.Future[bool] | None = None
        self._timer: asyncio.TimerHandle | None = None
        # when the follower last yielded anything (an event or a keep-alive)
        self.last_out = self._loop.time()

    def sent(self) -> None:
        self.last_out = self._loop.time()

    def _beat(self) -> None:
        assert self._heartbeat is not None
        due = self.last_out + self._heartbeat
        if self._loop.time() < due:
            self._timer = self._loop.call_at(due, self._beat)
            return
        self._timer = None
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(False)

    async def wait(self, waiters: Waiters) -> bool:
        """True when an append woke us; False when a keep-alive is due (the caller yields one, then
        ``sent()``)."""
        self._waiter = self._loop.create_future()
        waiters.waiting.append(self._waiter)
        if self._heartbeat is not None and self._timer is None:
            self._timer = self._loop.call_at(self.last_out + self._heartbeat, self._beat)
        try:
            return await self._waiter
        finally:
            if not self._waiter.done():
                self._waiter.cancel()
            self._waiter = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


async def wait_registered(waiters: dict[str, set[asyncio.Event]], key: str,
                          registered: Callable[[], None] | None = None) -> None:
    """Waits on an Event of its own, registered under ``key`` in ``waiters`` (whoever sets the key's events
    wakes it) and unregistered however the wait ends. ``registered`` runs once it is in place (e.g. to ask for
    a check that covers it). The only await is the Event's, so a cancellation always ends the wait."""
    waiter = asyncio.Event()
    waiters.setdefault(key, set()).add(waiter)
    try:
        if registered is not None:
            registered()
        await waiter.wait()
    finally:
        mine = waiters.get(key)
        if mine is not None:
            mine.discard(waiter)
            if not mine:
                waiters.pop(key, None)


async def end_task(task: asyncio.Task[None], seconds: float = 5.0) -> bool:
    """Cancels ``task`` and waits for it, at most ``seconds``: a library may swallow a cancellation (redis-py
    did, inside a command), so the cancel is repeated until the task ends instead of awaited once forever.
    True if it ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not task.done() and loop.time() < deadline:
        task.cancel()
        await asyncio.wait({task}, timeout=min(0.5, max(deadline - loop.time(), 0.0)))
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: an error at shutdown is not reported as never retrieved
    return task.done()
