"""Redis stream log and stop signals (the scale profile: several replicas share one Redis).

The log is a Redis Stream per (session, assistant message), key ``{prefix}:stream:events:{session}:{message}``
(WeKnora's key layout, spec §5.2, under Knora's prefix). Entry ids are ``0-(seq+1)``, assigned by a Lua script
that appends and refreshes the TTL atomically, so the seq is gap-free across processes and a reader's cursor
is simply a stream id: ``XREAD BLOCK`` from it wakes on the next append (push, no polling interval).

Followers do not each hold a blocking read: a follower reads what is stored already itself (``XRANGE``), then
joins the process's one reader, a single ``XREAD BLOCK`` over every followed stream (plus a private wake key,
so a new stream joins the read at once). Each entry is fetched and decoded once per process and handed to
every local follower of its stream — with a thousand streams in flight, one command per batch instead of one
per event per follower.

Appends are idempotent: redis-py retries a command whose connection failed (``reconnecting``), and the chat
service retries a failed terminal entry — when the first attempt was applied but its reply lost, the retry
must not write the event twice (followers would see a duplicated frame). Each event gets an append key (this
log's id and a counter) at its first append; the script stores a key once.

Appends issued while others are in flight are sent together as one pipeline (one round trip, one connection)
by a single writer task, in the order they were made — a thousand streams appending at once would otherwise
need a thousand connections (and overflow the pool). An append alone is sent at once, so its latency is
unchanged.

Stop signals on Redis live beside it, in ``redis_stops.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from knora.adapters.stream.follow import Heartbeat, Waiters
from knora.adapters.stream.memory import is_terminal
from knora.domain.stream import StreamEvent

log = logging.getLogger(__name__)

# KEYS: the stream, its appends (append key -> seq); ARGV: payload, TTL, append key. An append whose key is
# stored already was applied before (its reply lost, or the caller retried): its seq is returned, and nothing
# is written twice. The key hash lives and expires with its stream.
_APPEND = """
local done = redis.call('HGET', KEYS[2], ARGV[3])
if done then return tonumber(done) end
local n = redis.call('XLEN', KEYS[1])
redis.call('XADD', KEYS[1], '0-' .. (n + 1), 'e', ARGV[1])
redis.call('HSET', KEYS[2], ARGV[3], n)
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return n
"""

BLOCK_MS = 5000  # a blocked XREAD returns at least this often, to notice an expired stream
MAX_PIPELINE = 512  # appends per pipeline
READ_MARGIN_S = 30.0  # the blocking read's socket timeout: its block time plus this


HEALTH_CHECK_S = 5  # a pooled connection idle this long is PINGed (and replaced if dead) before it is used


def reconnecting() -> dict[str, Any]:
    """Connection settings that survive a Redis restart (issue 20, item 7). After an outage the pool holds
    connections the server closed; the first command on one failed with "Connection closed by server". The
    health check PINGs a connection idle past ``HEALTH_CHECK_S`` and reconnects it before the command is
    sent, and a command that still meets a dead connection is retried on a fresh one, briefly, with backoff.
    Keep-alive lets the OS notice a half-open connection."""
    return {"health_check_interval": HEALTH_CHECK_S, "socket_keepalive": True, "socket_connect_timeout": 5,
            "retry": Retry(ExponentialBackoff(cap=1.0, base=0.05), 3),
            "retry_on_error": [RedisConnectionError, RedisTimeoutError, ConnectionError, OSError]}


def waiting_client(url: str, max_connections: int = 128) -> aioredis.Redis:
    """A client whose commands wait for a free connection instead of failing (redis-py's default pool raises
    ``MaxConnectionsError`` past 100 — a thousand turns starting at once each check their stop key)."""
    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=None,
                                                    **reconnecting())
    return aioredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


def _decode(entry_id: bytes | str, fields: dict[Any, Any]) -> StreamEvent | None:
    raw: Any = fields.get(b"e", fields.get("e"))
    eid = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    try:
        seq = int(eid.split("-", 1)[1]) - 1
        data = json.loads(raw)
    except (ValueError, TypeError, IndexError):
        return None  # unparsable entries are skipped (they still occupy their seq)
    data["seq"] = seq
    try:
        return StreamEvent.model_validate(data)
    except ValueError:
        return None


@dataclass
class _Watch:
    """A stream this process follows: the entries the shared reader fetched since the watch began."""

    cursor: int  # the last seq fetched
    base: int  # entries[0] has seq base + 1
    # None: an unparsable entry (keeps its seq)
    entries: list[StreamEvent | None] = field(default_factory=list)
    waiters: Waiters = field(default_factory=Waiters)
    followers: int = 0
    gone: bool = False  # the key expired while followed

    def wake(self) -> None:
        self.waiters.wake()


class RedisStreamLog:
    def __init__(self, url: str, prefix: str = "knora", ttl_seconds: int = 3600,
                 max_connections: int = 4096) -> None:
        self.prefix = prefix
        self.ttl_seconds = max(int(ttl_seconds), 1)
        self._client = waiting_client(url)
        # The blocking read holds a connection; it gets a pool of its own so appends never queue behind it.
        # Their socket timeout must outlast the block time: redis-py's default (5 s) equals BLOCK_MS, so an
        # idle follower's XREAD raced its own socket timeout — and lost it when the process was busy.
        self._blocking = aioredis.Redis.from_url(url, max_connections=max_connections,
                                                 socket_timeout=BLOCK_MS / 1000 + READ_MARGIN_S,
                                                 **reconnecting())
        self._append = self._client.register_script(_APPEND)
        self._pending: list[tuple[str, str, str, asyncio.Future[int]]] = []
        self._id = uuid.uuid4().hex[:12]  # this log's part of the append keys it gives
        self._appended = itertools.count()
        self._writer: asyncio.Task[None] | None = None
        self._watches: dict[str, _Watch] = {}  # followed streams of this process
        self._reader: asyncio.Task[None] | None = None
        self._wake_key = f"{prefix}:stream:reader:{uuid.uuid4()}"
        self._wake_last = "0-0"

    def key(self, session_id: str, message_id: str) -> str:
        return f"{self.prefix}:stream:events:{session_id}:{message_id}"

    def _keys_key(self, stream_key: str) -> str:
        """The hash of a stream's append keys (beside the stream, outside WeKnora's ``events`` layout)."""
        return f"{self.prefix}:stream:appends:{stream_key.removeprefix(f'{self.prefix}:stream:events:')}"

    async def ping(self) -> None:
        await self._client.ping()

    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int:
        if not event.append_key:  # kept on the event: the caller's own retry of it is the same append
            event.append_key = f"{self._id}:{next(self._appended)}"
        payload = event.model_dump_json(exclude={"seq"})
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append((self.key(session_id, message_id), payload, event.append_key, fut))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="knora-stream-appends")
        return await asyncio.shield(fut)  # a cancelled caller does not take back an append others share

    async def _write(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_PIPELINE], self._pending[MAX_PIPELINE:]
            try:
                if len(batch) == 1:
                    key, payload, append_key, _ = batch[0]
                    results: list[Any] = [await self._append(keys=[key, self._keys_key(key)],
                                                             args=[payload, self.ttl_seconds, append_key])]
                else:
                    pipe = self._client.pipeline(transaction=False)
                    for key, payload, append_key, _ in batch:
                        await self._append(keys=[key, self._keys_key(key)],
                                           args=[payload, self.ttl_seconds, append_key], client=pipe)
                    results = await pipe.execute(raise_on_error=False)
            except Exception as exc:  # noqa: BLE001 - handed to every caller of this batch
                results = [exc] * len(batch)
            for (_, _, _, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, BaseException):
                    fut.set_exception(result)
                else:
                    fut.set_result(int(result))

    async def read(self, session_id: str, message_id: str, after: int = -1) -> list[StreamEvent]:
        entries: Any = await self._client.xrange(self.key(session_id, message_id), min=f"0-{after + 2}",
                                                 max="+")
        return [e for e in (_decode(i, f) for i, f in entries) if e is not None]

    async def follow(self, session_id: str, message_id: str, after: int = -1,
                     heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        key = self.key(session_id, message_id)
        cursor = after
        seen = False
        for event in await self._range(key, cursor):  # what is stored already, read by this follower itself
            cursor, seen = event.seq, True
            yield event
            if is_terminal(event):
                return
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = _Watch(cursor=cursor, base=cursor)
            await self._kick()
        watch.followers += 1
        beat = Heartbeat(heartbeat)
        try:
            while True:
                if cursor < watch.base:  # joined a watch that began after our cursor: read the gap ourselves
                    for event in await self._range(key, cursor, watch.base):
                        cursor, seen = event.seq, True
                        yield event
                        if is_terminal(event):
                            return
                    cursor = max(cursor, watch.base)
                at = cursor - watch.base  # watch.entries[at] has seq cursor + 1
                if at < len(watch.entries):
                    for entry in watch.entries[at:]:
                        cursor += 1
                        if entry is None:
                            continue  # unparsable entries are skipped (they still occupy their seq)
                        seen = True
                        yield entry
                        if is_terminal(entry):
                            return
                    beat.sent()
                    continue
                if watch.gone and seen:
                    return  # expired while followed
                if not await beat.wait(watch.waiters):
                    beat.sent()
                    yield None
        finally:
            beat.close()
            watch.followers -= 1
            if watch.followers <= 0 and self._watches.get(key) is watch:
                del self._watches[key]

    async def _range(self, key: str, after: int, until: int | None = None) -> list[StreamEvent]:
        entries: Any = await self._client.xrange(key, min=f"0-{after + 2}",
                                                 max="+" if until is None else f"0-{until + 1}")
        return [e for e in (_decode(i, f) for i, f in entries) if e is not None]

    async def _kick(self) -> None:
        """A new stream to watch: start the reader, or wake its blocked XREAD so the next one includes it."""
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read_all(), name="knora-stream-reader")
            return
        pipe = self._client.pipeline(transaction=False)
        pipe.xadd(self._wake_key, {"k": "1"}, maxlen=16, approximate=True)
        pipe.expire(self._wake_key, 3600)
        await pipe.execute()

    async def _read_all(self) -> None:
        """The process's one reader: a blocking XREAD over every followed stream (and the wake key)."""
        failures = 0
        while self._watches:
            streams = {k: f"0-{w.cursor + 1}" for k, w in self._watches.items()}
            streams[self._wake_key] = self._wake_last
            try:
                reply: Any = await self._blocking.xread(streams, block=BLOCK_MS)  # type: ignore[arg-type]
                if not reply:
                    await self._mark_expired()
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.warning("stream reader: XREAD failed (%d); reading again", failures, exc_info=True)
                await asyncio.sleep(min(0.05 * 2 ** min(failures, 5), 1.0))
                continue
            failures = 0
            for raw_key, entries in reply or ():
                key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
                if key == self._wake_key:
                    last = entries[-1][0] if entries else None
                    if last is not None:
                        self._wake_last = last.decode() if isinstance(last, bytes) else last
                    continue
                watch = self._watches.get(key)
                if watch is None:
                    continue
                for entry_id, fields in entries:
                    eid = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    seq = int(eid.split("-", 1)[1]) - 1
                    if seq <= watch.cursor:
                        continue
                    while watch.cursor + 1 < seq:  # never expected (seqs are gap-free): keep positions right
                        watch.entries.append(None)
                        watch.cursor += 1
                    watch.entries.append(_decode(entry_id, fields))
                    watch.cursor = seq
                watch.wake()

    async def _mark_expired(self) -> None:
        keys = list(self._watches)
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.exists(key)
        for key, present in zip(keys, await pipe.execute(), strict=True):
            watch = self._watches.get(key)
            if watch is not None and not present:
                watch.gone = True
                watch.wake()

    async def exists(self, session_id: str, message_id: str) -> bool:
        return bool(await self._client.exists(self.key(session_id, message_id)))

    async def close(self) -> None:
        if self._writer is not None and not self._writer.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._writer)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        for watch in self._watches.values():
            watch.gone = True
            watch.wake()
        with contextlib.suppress(Exception):
            await self._client.delete(self._wake_key)
        await self._blocking.aclose()
        await self._client.aclose()
