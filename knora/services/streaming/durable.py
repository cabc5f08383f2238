"""Retried writes that end a turn (issue 20, items 6b and 7).

The end of a turn makes two writes to two stores: the assistant message (the database) and the terminal
entry of the stream log (``complete`` or ``stop``). Either store may be down for a while when the turn ends
(PostgreSQL restarting, a Redis outage). Neither failure may leave the turn open: a follower must get its
terminal entry once the log is back, and the answer must be saved once the database is back. So the first
attempt is made inline (the usual case costs nothing extra) and, if it fails, the write is retried in the
background with a bounded backoff, tracked so that shutdown and tests can wait for or cancel it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)

Op = Callable[[], Awaitable[Any]]

# Seconds between attempts: about 5 minutes in all, enough for a database or Redis restart, bounded so a
# store that never comes back does not keep a task per turn forever.
RETRY_DELAYS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 60.0, 60.0, 60.0)
ATTEMPT_TIMEOUT_S = 15.0  # one attempt that hangs (a partitioned network) counts as a failure


async def attempt(op: Op, what: str, timeout: float = ATTEMPT_TIMEOUT_S) -> bool:
    """One try of ``op``; False (logged) when it failed or took longer than ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            await op()
        return True
    except Exception as exc:  # noqa: BLE001 - every failure of a store is retried the same way
        log.warning("%s failed: %s", what, exc or type(exc).__name__)
        return False


async def retry(op: Op, what: str, delays: Sequence[float] = RETRY_DELAYS) -> bool:
    """``op`` retried after each of ``delays``; True once it succeeded, False when every attempt failed."""
    for delay in delays:
        await asyncio.sleep(delay)
        if await attempt(op, what):
            log.info("%s succeeded on retry", what)
            return True
    log.error("%s: gave up after %d retries", what, len(delays))
    return False


class Retries:
    """The background retries of one chat service: each runs its ops in order, each op until it succeeds
    (a terminal log entry after its error frame, never before)."""

    def __init__(self, delays: Sequence[float] = RETRY_DELAYS) -> None:
        self.delays = tuple(delays)
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, ops: Sequence[tuple[Op, str]], name: str,
              on_done: Callable[[], Any] | None = None) -> None:
        async def run() -> None:
            try:
                for op, what in ops:
                    if not await retry(op, what, self.delays):
                        return  # later ops depend on this one (the entry order of the log)
            finally:
                if on_done is not None:
                    on_done()

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def wait(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Shutdown: pending writes are dropped; the next start closes their turns (``close_orphans``)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
