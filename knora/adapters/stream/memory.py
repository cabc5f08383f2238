"""In-process stream log and stop signals (the embedded profile).

Readers are woken by a future each waiting follower leaves on the stream, resolved by the next append, so
delivery costs one loop iteration instead of a polling interval. The SSE heartbeat is one timer per follower
per heartbeat period (re-armed lazily), not a timeout per wait: with a thousand streams at fifty events a
second, a timer per event was a large share of the process's work. Unlike WeKnora's memory manager, streams
expire: a stream untouched for ``ttl_seconds`` is dropped, and at most ``max_streams`` are kept (oldest first
out), so a long-running server does not grow without bound. Expiry is checked on append (amortised), so there
is no background task to manage.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field

from knora.adapters.stream.follow import Heartbeat, Waiters, wait_registered
from knora.domain.stream import StreamEvent, stream_event

TERMINAL = frozenset({"complete", "stop"})


def is_terminal(event: StreamEvent) -> bool:
    """A turn's log ends with complete or stop; error frames never end it (spec §5.6.1)."""
    return event.type in TERMINAL


async def _wait(event: asyncio.Event, timeout: float | None) -> bool:
    """True when ``event`` was set, False after ``timeout`` seconds (never yields inside the timeout)."""
    if timeout is None:
        await event.wait()
        return True
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


@dataclass
class _Stream:
    events: list[StreamEvent] = field(default_factory=list)
    waiters: Waiters = field(default_factory=Waiters)  # followers waiting for the next append
    touched: float = field(default_factory=time.monotonic)
    keyed: dict[str, int] = field(default_factory=dict)  # append_key -> seq, for events that carry one

    def wake(self) -> None:
        self.waiters.wake()


class MemoryStreamLog:
    def __init__(self, ttl_seconds: float = 3600, max_streams: int = 10_000) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_streams = max_streams
        self._streams: OrderedDict[tuple[str, str], _Stream] = OrderedDict()
        self._appends = 0
        self._creation: dict[tuple[str, str], asyncio.Event] = {}  # followers waiting for a stream to start
        self._closed = False

    def _live(self, key: tuple[str, str]) -> _Stream | None:
        stream = self._streams.get(key)
        if stream is not None and time.monotonic() - stream.touched > self.ttl_seconds:
            self._drop(key)
            return None
        return stream

    def _drop(self, key: tuple[str, str]) -> None:
        stream = self._streams.pop(key, None)
        if stream is not None:
            stream.wake()  # followers notice the stream is gone and end

    def _sweep(self) -> None:
        now = time.monotonic()
        while self._streams:
            key, oldest = next(iter(self._streams.items()))
            if now - oldest.touched > self.ttl_seconds or len(self._streams) > self.max_streams:
                self._drop(key)
            else:
                break

    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int:
        key = (session_id, message_id)
        stream = self._live(key)
        if stream is None:
            stream = self._streams[key] = _Stream()
            created = self._creation.pop(key, None)
            if created is not None:
                created.set()
        else:
            self._streams.move_to_end(key)
        stream.touched = time.monotonic()
        if event.append_key:
            if (stored := stream.keyed.get(event.append_key)) is not None:
                return stored  # the same append again: stored once
            stream.keyed[event.append_key] = len(stream.events)
        seq = len(stream.events)
        stream.events.append(stream_event(event.type, event.content, event.done, event.data, event.id,
                                          seq=seq,
                                          # the log owns its entries (callers may reuse theirs)
                                          timestamp=event.timestamp))
        if stream.waiters:
            stream.wake()
        self._appends += 1
        if self._appends % 256 == 0 or len(self._streams) > self.max_streams:
            self._sweep()
        return seq

    async def read(self, session_id: str, message_id: str, after: int = -1) -> list[StreamEvent]:
        stream = self._live((session_id, message_id))
        return list(stream.events[after + 1:]) if stream else []

    async def follow(self, session_id: str, message_id: str, after: int = -1,
                     heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        key = (session_id, message_id)
        cursor = after
        seen_stream = False
        beat = Heartbeat(heartbeat)
        try:
            while not self._closed:
                stream = self._live(key)
                if stream is None:
                    if seen_stream:
                        return  # the stream expired (or the log closed) while we followed it
                    created = self._creation.setdefault(key, asyncio.Event())
                    try:
                        if not await _wait(created, heartbeat):
                            beat.sent()
                            yield None
                    finally:
                        if self._creation.get(key) is created and created.is_set():
                            self._creation.pop(key, None)
                    continue
                seen_stream = True
                if cursor + 1 < len(stream.events):
                    events = stream.events[cursor + 1:]
                    for event in events:
                        cursor = event.seq
                        yield event
                        if is_terminal(event):
                            return
                    beat.sent()
                    continue
                if not await beat.wait(stream.waiters):
                    beat.sent()
                    yield None
        finally:
            beat.close()

    async def exists(self, session_id: str, message_id: str) -> bool:
        return self._live((session_id, message_id)) is not None

    async def close(self) -> None:
        self._closed = True
        for key in list(self._streams):
            self._drop(key)
        for created in self._creation.values():
            created.set()


class MemoryStopSignals:
    """Stop requests for turns running in this process; remembered for ``ttl_seconds`` (bounded)."""

    def __init__(self, ttl_seconds: float = 3600, max_entries: int = 100_000) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self._stopped: OrderedDict[str, float] = OrderedDict()
        self._waiters: dict[str, set[asyncio.Event]] = {}

    async def request_stop(self, message_id: str) -> None:
        self._stopped[message_id] = time.monotonic()
        self._stopped.move_to_end(message_id)
        now = time.monotonic()
        while self._stopped:
            key, at = next(iter(self._stopped.items()))
            if now - at > self.ttl_seconds or len(self._stopped) > self.max_entries:
                self._stopped.pop(key)
            else:
                break
        for waiter in self._waiters.get(message_id, ()):
            waiter.set()

    async def is_stopped(self, message_id: str) -> bool:
        at = self._stopped.get(message_id)
        return at is not None and time.monotonic() - at <= self.ttl_seconds

    async def wait_for_stop(self, message_id: str) -> None:
        if await self.is_stopped(message_id):
            return
        await wait_registered(self._waiters, message_id)

    async def close(self) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.set()


class LocalTurnLeases:
    """Leases visible to this process only (the embedded profile: one server process per data directory).
    Another process's turns cannot be seen, so callers close only turns older than the log's TTL there."""

    shared = False

    def __init__(self, ttl_seconds: float = 5.0) -> None:
        self.ttl_seconds = ttl_seconds
        self._held: set[str] = set()
        self._closing: set[str] = set()

    async def hold(self, message_ids: Collection[str]) -> None:
        self._held.update(message_ids)

    async def release(self, message_id: str) -> None:
        self._held.discard(message_id)

    async def held(self, message_ids: Collection[str]) -> set[str]:
        return self._held.intersection(message_ids)

    async def claim_close(self, message_id: str) -> bool:
        if message_id in self._closing:
            return False
        self._closing.add(message_id)
        return True

    async def close(self) -> None:
        self._held.clear()
