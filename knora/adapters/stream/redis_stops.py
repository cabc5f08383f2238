"""Redis stop signals (the scale profile): a stop request reaches whichever replica runs the turn.

Stop requests are a key (so a late watcher still sees them) plus a pub/sub message (so a waiting watcher on
any replica wakes at once). One pub/sub connection per process fans out to local waiters, and one checker
task per process reads the stop keys (issue 16, item 1: the watchers themselves do no Redis I/O).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from knora.adapters.stream.follow import end_task, wait_registered
from knora.adapters.stream.redis import waiting_client

log = logging.getLogger(__name__)

CHECK_S = 5.0  # every watched turn's stop key is read this often (a pub/sub message lost in a reconnect)


class RedisStopSignals:
    """A turn's stop watcher awaits nothing but its own ``asyncio.Event``: the Redis I/O of waiting — the
    subscription, and reading the stop keys (at once for a new watcher: a stop requested before it
    listened; every ``CHECK_S`` for all: a message lost while the subscription reconnected) — runs in this
    process's one listener and one checker task, for every turn together.

    Why (issue 16, item 1): the watcher used to call ``EXISTS`` itself, between ``wait_for`` timeouts. A
    cancellation that reached it inside redis-py's command (``send_packed_command``) could come back as a
    normal return: the watcher looped on, the turn awaited it forever after its answer was logged,
    and ``complete`` never came. An ``Event.wait`` cannot lose a cancellation, so the watcher ends when its
    turn ends, whatever the Redis client does; the shared tasks are ended, bounded, at ``close``."""

    def __init__(self, url: str, prefix: str = "knora", ttl_seconds: int = 3600,
                 check_seconds: float = CHECK_S) -> None:
        self.prefix = prefix
        self.ttl_seconds = max(int(ttl_seconds), 1)
        self.check_seconds = check_seconds
        self._client = waiting_client(url)
        self._channel = f"{prefix}:stop"
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._checker: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._fresh: set[str] = set()  # watched turns whose key the checker has not read since they joined
        self._nudge = asyncio.Event()  # wakes the checker: new watchers, or a (re)subscription
        self._full = False  # the next check reads every watched turn's key

    def _key(self, message_id: str) -> str:
        return f"{self.prefix}:stop:{message_id}"

    async def request_stop(self, message_id: str) -> None:
        await self._client.set(self._key(message_id), "1", ex=self.ttl_seconds)
        await self._client.publish(self._channel, message_id)

    async def is_stopped(self, message_id: str) -> bool:
        return bool(await self._client.exists(self._key(message_id)))

    def _wake(self, message_id: str) -> None:
        for waiter in self._waiters.get(message_id, ()):
            waiter.set()

    async def _listen(self) -> None:
        while True:
            pubsub = self._client.pubsub()
            try:
                await pubsub.subscribe(self._channel)
                self._subscribed.set()
                self._full = True  # stops published while we were not subscribed are seen through their keys
                self._nudge.set()
                async for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    data = message["data"]
                    self._wake(data.decode() if isinstance(data, bytes) else str(data))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("stop-signal subscription lost; reconnecting", exc_info=True)
                self._subscribed.clear()
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]  # typed from redis 8

    async def _check(self) -> None:
        """Reads stop keys for the watchers (one pipeline for all) and wakes those whose turn was stopped."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self.check_seconds
        failures = 0
        while True:
            await self._subscribed.wait()  # keys read after subscribing: no stop falls between the two
            if not self._fresh and not self._full:
                self._nudge.clear()
                with contextlib.suppress(TimeoutError):  # pure asyncio: the periodic full check
                    await asyncio.wait_for(self._nudge.wait(), max(due - loop.time(), 0.0))
            if self._full or loop.time() >= due:
                self._full, due = False, loop.time() + self.check_seconds
                ids = list(self._waiters)
                self._fresh.clear()
            else:
                ids, self._fresh = [m for m in self._fresh if m in self._waiters], set()
            if not ids:
                continue
            try:
                pipe = self._client.pipeline(transaction=False)
                for mid in ids:
                    pipe.exists(self._key(mid))
                present = await pipe.execute()
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.warning("stop keys not read (%d); reading again", failures, exc_info=True)
                self._fresh.update(ids)
                await asyncio.sleep(min(0.05 * 2 ** min(failures, 5), 1.0))
                continue
            failures = 0
            for mid, stopped in zip(ids, present, strict=True):
                if stopped:
                    self._wake(mid)

    def _start(self) -> None:
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self._listen(), name="knora-stop-signals")
        if self._checker is None or self._checker.done():
            self._checker = asyncio.create_task(self._check(), name="knora-stop-keys")

    async def wait_for_stop(self, message_id: str) -> None:
        self._start()

        def check_now() -> None:  # the checker reads its key at once (a stop sent just before)
            self._fresh.add(message_id)
            self._nudge.set()

        await wait_registered(self._waiters, message_id, check_now)  # a cancellation always ends it

    async def close(self) -> None:
        for task in (self._listener, self._checker):
            if task is not None:
                await end_task(task)
        await self._client.aclose()
