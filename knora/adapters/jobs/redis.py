"""``KNORA_JOB_QUEUE=redis``: jobs claimed through a Redis Streams consumer group, for several replicas.

**The database stays the record of truth; Redis carries the wake-up and the claim.** Redis cannot join the SQL
transaction that writes a document and its job, and a job that exists only in Redis (or only in the database)
after a crash between the two writes is the stuck-``pending`` document of issue 16. So the ``jobs`` row is
still written in the document's transaction (``JobRequest``), and Redis is fed from the table like an outbox:

* **Relay (the outbox).** Each replica publishes claimable rows of the ``jobs`` table to the stream
  ``{prefix}:jobs`` — at once after its own commits (``notify``/``enqueue``) and every ``poll_seconds``
  (a third of the lease) for everyone else's, so a process that died between its commit and its publish
  delays its job by one poll, never forever. A hash ``{prefix}:jobs:inflight`` (job id -> entry id), set in
  the same Lua script as the ``XADD``, keeps two replicas from publishing one job twice; the periodic round
  also republishes a job whose entry vanished (a Redis restart without persistence).
* **Claim without polling delay.** Every replica reads the group with ``XREADGROUP … BLOCK`` (a new entry
  wakes one replica at once) and then claims the job's row with a guarded UPDATE (``claim_ids``): the
  database fences the claim, so an entry delivered twice (a Redis failover losing an ack, a republished
  entry) never runs a job twice at once. An entry whose row is not claimable (finished, failed, running
  elsewhere, deleted) is acknowledged and deleted.
* **Short leases.** A running job heartbeats its row and its entry (``XCLAIM … JUSTID`` resets the entry's
  idle time) every third of the lease (10 s by default); every replica runs ``XAUTOCLAIM`` for entries idle
  longer than the lease every ``poll_seconds``, so a dead replica's jobs move within about a lease and a
  third. Its row's heartbeat is written before the entry's, so an entry idle for a lease has a stale row.
* **Retries, backoff, dead letter** are the in-process queue's (``InProcessJobQueue._run``): a failed job's
  row is requeued with ``run_after`` (the backoff), its entry removed, and a due time put in the sorted set
  ``{prefix}:jobs:due`` so that every replica's relay wakes when it is due; a job failed too often ends
  ``failed`` in the table with its reason and its kind's ``give_up`` writes it to the document's status.
* **Graceful stop releases the leases**: a job cut short by a shutdown is refunded in the table and
  republished at once, as is anything still pending for this consumer, which then leaves the group.

If Redis is unreachable the dispatcher claims straight from the table (as the in-process queue does) every
poll until Redis answers again: slower, never stuck. Cancelling a parse needs nothing from the queue: the
document is marked ``cancelled`` and a job that starts later does nothing, one running elsewhere has its
commit refused (``IngestService.process``); documents left without a job are found at start-up
(``IngestService.requeue_orphans``), and the relay is that sweep for jobs left without an entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from knora.adapters.jobs.inprocess import InProcessJobQueue
from knora.adapters.stream.redis import reconnecting, waiting_client
from knora.domain.common import utcnow
from knora.ports.store import JobRecord, JobRepo

log = logging.getLogger(__name__)

GROUP = "workers"
RELAY_BATCH = 1000  # claimable rows one relay round looks at
READ_MARGIN_S = 30.0  # the blocking read's socket timeout: its block time plus this
RELEASE_BATCH = 1000  # pending entries handed back at a graceful stop

# KEYS: stream, inflight hash; ARGV: job id. Publishes the job unless it is published already.
_PUBLISH = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return false end
local e = redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], e)
return e
"""

# KEYS: stream, inflight hash; ARGV: job id, its entry id (or ''), group. Replaces the job's entry by a new
# one (a job released at a stop, an entry lost) unless another process has republished it meanwhile.
_REPUBLISH = """
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur and cur ~= ARGV[2] then return false end
if ARGV[2] ~= '' then
  redis.call('XACK', KEYS[1], ARGV[3], ARGV[2])
  redis.call('XDEL', KEYS[1], ARGV[2])
end
local e = redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], e)
return e
"""

# KEYS: stream, inflight hash; ARGV: group, then (job id, entry id) pairs. The entries are done with: acked,
# deleted, and their job unmarked if the mark is still theirs.
_DROP = """
for i = 2, #ARGV, 2 do
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[i + 1])
  redis.call('XDEL', KEYS[1], ARGV[i + 1])
  if redis.call('HGET', KEYS[2], ARGV[i]) == ARGV[i + 1] then redis.call('HDEL', KEYS[2], ARGV[i]) end
end
return #ARGV
"""


def _text(v: bytes | str | int) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _entries(raw: Sequence[Any] | None) -> list[tuple[str, str]]:
    """(entry id, job id) of stream entries as redis-py returns them; deleted entries (no fields) are left
    out."""
    out: list[tuple[str, str]] = []
    for entry_id, fields in raw or ():
        if fields:
            job = fields.get(b"job", fields.get("job"))
            if job is not None:
                out.append((_text(entry_id), _text(job)))
    return out


async def _wait(event: asyncio.Event, timeout: float) -> None:
    """Until ``event`` is set or ``timeout`` seconds pass. ``asyncio.timeout``, not ``wait_for``: on Python
    3.11 ``wait_for`` loses a cancellation that lands as the event is set, and the loop it is in would outlive
    ``stop``."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()


class RedisJobQueue(InProcessJobQueue):
    def __init__(self, repo: JobRepo, url: str, *, prefix: str = "knora", workers: int = 4,
                 lease_seconds: float = 10.0, max_attempts: int = 3, retry_seconds: float = 2.0,
                 consumer: str | None = None) -> None:
        super().__init__(repo, workers=workers, lease_seconds=lease_seconds, poll_seconds=lease_seconds / 3,
                         max_attempts=max_attempts, retry_seconds=retry_seconds)
        self._url = url
        self.stream = f"{prefix}:jobs"
        self._inflight = f"{prefix}:jobs:inflight"
        self._due = f"{prefix}:jobs:due"
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._client: aioredis.Redis | None = None
        self._blocking: aioredis.Redis | None = None
        self._entries: dict[str, str] = {}  # running job id -> its stream entry
        self._done: set[str] = set()  # finished jobs whose entry is not removed yet
        self._publish_wake = asyncio.Event()
        self._finish_wake = asyncio.Event()
        self._cursor = "0-0"  # where the next XAUTOCLAIM scan goes on
        # False while the dispatcher claims from the table (Redis unreachable); None before the first read
        self.redis_ok: bool | None = None
        self._relay_failing = False

    # --- the port ------------------------------------------------------------------------------------------
    async def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None) -> str:
        job_id = await super().enqueue(kind, payload, key=key)
        self._publish_wake.set()
        return job_id

    def notify(self) -> None:
        super().notify()
        self._publish_wake.set()

    async def start(self) -> None:
        if self._tasks:
            return
        self._client = waiting_client(self._url)
        block_s = self._poll
        self._blocking = aioredis.Redis.from_url(self._url, socket_timeout=block_s + READ_MARGIN_S,
                                                 **reconnecting())
        with contextlib.suppress(RedisError, OSError):
            await self._ensure_group()
        self._stopping = False
        self._tasks = [asyncio.create_task(self._dispatch(), name="knora-job-dispatcher"),
                       asyncio.create_task(self._relay_loop(), name="knora-job-relay"),
                       asyncio.create_task(self._finish_loop(), name="knora-job-finisher")]
        self._publish_wake.set()
        self._wake.set()

    async def stop(self) -> None:
        """Stops like the in-process queue (a job cut short is refunded in the table and, here, republished
        at once), then hands back what is still pending for this consumer and leaves the group."""
        await super().stop()
        client, blocking = self._client, self._blocking
        if client is None:
            return
        with contextlib.suppress(RedisError, OSError):
            # finished jobs the finisher had not reached; the rest were claimed but never started (stopped
            # first): their rows are refunded and their entries handed on like those of jobs cut short
            done = [(j, e) for j, e in self._entries.items() if j in self._done]
            await self._drop(done)
            for job_id, entry_id in self._entries.items():
                if job_id not in self._done:
                    with contextlib.suppress(Exception):
                        await self._repo.requeue(job_id, refund=True)
                    await self._republish(job_id, entry_id)
            await self._release_pending(client)
        self._entries.clear()
        self._done.clear()
        self._client = self._blocking = None
        for c in (client, blocking):
            if c is not None:
                with contextlib.suppress(Exception):
                    await c.aclose()

    # --- Redis ----------------------------------------------------------------------------------------------
    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            raise RuntimeError("the Redis job queue is not started")
        return self._client

    async def _ensure_group(self) -> None:
        try:
            await self._redis().xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _drop(self, pairs: Sequence[tuple[str, str]]) -> None:
        if not pairs:
            return
        args: list[str] = [GROUP]
        for job_id, entry_id in pairs:
            args += [job_id, entry_id]
        await self._redis().eval(_DROP, 2, self.stream, self._inflight, *args)

    async def _republish(self, job_id: str, entry_id: str) -> None:
        await self._redis().eval(_REPUBLISH, 2, self.stream, self._inflight,
                                 job_id, entry_id, GROUP)

    async def _release_pending(self, client: aioredis.Redis) -> None:
        pending = await client.xpending_range(self.stream, GROUP, min="-", max="+", count=RELEASE_BATCH,
                                              consumername=self.consumer)
        for p in pending:
            entry_id = _text(p["message_id"])
            found = _entries(await client.xrange(self.stream, entry_id, entry_id))
            if found:
                await self._republish(found[0][1], entry_id)
            else:
                await client.xack(self.stream, GROUP, entry_id)
        await client.xgroup_delconsumer(self.stream, GROUP, self.consumer)

    # --- the relay (the table is the outbox) ----------------------------------------------------------------
    async def _relay_loop(self) -> None:
        last_check = 0.0
        while not self._stopping:
            timeout = self._poll
            with contextlib.suppress(RedisError, OSError):
                first = await self._redis().zrange(self._due, 0, 0, withscores=True)
                if first:
                    timeout = max(0.0, min(timeout, float(first[0][1]) - time.time()))
            await _wait(self._publish_wake, timeout)
            self._publish_wake.clear()
            check = time.monotonic() - last_check >= self._poll
            if check:
                last_check = time.monotonic()
            try:
                await self._redis().zremrangebyscore(self._due, "-inf", time.time())
                await self.relay(check_lost=check)
                self._relay_failing = False
            except Exception as exc:  # noqa: BLE001 - the next round tries again
                if not self._relay_failing:  # once per outage, not every round
                    log.warning("job queue: publishing jobs to Redis failed (%s); retrying every %.1f s", exc,
                                self._poll)
                self._relay_failing = True

    async def relay(self, *, check_lost: bool = False) -> int:
        """Publishes the table's claimable jobs that have no entry; ``check_lost``: also those whose entry is
        gone from the stream. Returns how many were published."""
        stale = utcnow() - timedelta(seconds=self._lease)
        ids = await self._repo.claimable_ids(list(self._handlers), stale, RELAY_BATCH)
        if not ids:
            return 0
        client = self._redis()
        marks = await client.hmget(self._inflight, ids)
        published = 0
        async with client.pipeline(transaction=False) as pipe:
            for job_id, mark in zip(ids, marks, strict=True):
                if mark is None:
                    pipe.eval(_PUBLISH, 2, self.stream, self._inflight, job_id)
                    published += 1
            await pipe.execute()
        if check_lost:
            marked = [(job_id, _text(mark)) for job_id, mark in zip(ids, marks, strict=True)
                      if mark is not None]
            async with client.pipeline(transaction=False) as pipe:
                for _job_id, entry_id in marked:
                    pipe.xrange(self.stream, entry_id, entry_id)
                found = await pipe.execute()
            for (job_id, entry_id), hit in zip(marked, found, strict=True):
                if not hit:
                    log.warning("job queue: the stream entry of job %s is gone; publishing it again", job_id)
                    await self._republish(job_id, entry_id)
                    published += 1
        return published

    # --- claiming -------------------------------------------------------------------------------------------
    async def _dispatch(self) -> None:
        """Reads the group (blocking) for as many entries as there are free slots, and every ``poll_seconds``
        takes over entries idle longer than the lease; each is fenced by claiming its row."""
        last_sweep = 0.0
        while not self._stopping:
            free = self._workers - len(self._running)
            self._wake.clear()
            if free <= 0:
                await _wait(self._wake, self._poll)
                continue
            try:
                entries: list[tuple[str, str]] = []
                if time.monotonic() - last_sweep >= self._poll:
                    last_sweep = time.monotonic()
                    entries = await self._autoclaim(free)
                    await self._forget_idle_consumers()
                if not entries:
                    entries = await self._read(free)
                self.redis_ok = True
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    log.warning("job queue: Redis refused a read (%s)", exc)
                with contextlib.suppress(RedisError, OSError):
                    await self._ensure_group()
                continue
            except (RedisError, OSError) as exc:
                await self._from_the_table(free, exc)
                continue
            await self._claim(entries)

    async def _read(self, count: int) -> list[tuple[str, str]]:
        if self._blocking is None:
            return []
        got = await self._blocking.xreadgroup(GROUP, self.consumer, {self.stream: ">"}, count=count,
                                              block=max(1, int(self._poll * 1000)))
        if isinstance(got, dict):  # RESP3: {stream: [entries]}
            return [e for entries in got.values() for e in _entries(entries[0] if entries else None)]
        return _entries(got[0][1]) if got else []

    async def _autoclaim(self, count: int) -> list[tuple[str, str]]:
        """Entries idle longer than the lease (their consumer died, or stopped heartbeating), up to
        ``count``; the scan goes on from where the last one ended, so a long pending list is covered."""
        client = self._redis()
        out: list[tuple[str, str]] = []
        for _ in range(50):
            got = await client.xautoclaim(self.stream, GROUP, self.consumer, int(self._lease * 1000),
                                          start_id=self._cursor, count=count - len(out))
            self._cursor = _text(got[0])
            out += _entries(got[1])
            if self._cursor == "0-0" or len(out) >= count:
                break
        return out

    async def _forget_idle_consumers(self) -> None:
        """Consumers of processes gone long ago, with nothing pending, leave the group's listing."""
        client = self._redis()
        for c in await client.xinfo_consumers(self.stream, GROUP):
            name = _text(c["name"])
            gone = int(c["idle"]) > 30_000 + 10_000 * self._lease
            if name != self.consumer and int(c["pending"]) == 0 and gone:
                await client.xgroup_delconsumer(self.stream, GROUP, name)

    async def _claim(self, entries: Sequence[tuple[str, str]]) -> None:
        if not entries:
            return
        by_job: dict[str, str] = {}
        extra: list[tuple[str, str]] = []
        for entry_id, job_id in entries:
            if job_id in by_job or job_id in self._running:
                extra.append((job_id, entry_id))
            else:
                by_job[job_id] = entry_id
        try:
            jobs = await self._repo.claim_ids(list(by_job), list(self._handlers),
                                              utcnow() - timedelta(seconds=self._lease))
        except Exception:
            # the entries stay pending here: they are taken over (by anyone) once idle for a lease
            log.exception("job queue: claiming jobs in the database failed")
            return
        won = {j.id for j in jobs}
        lost = [(job_id, entry_id) for job_id, entry_id in by_job.items() if job_id not in won]
        with contextlib.suppress(RedisError, OSError):
            await self._drop(lost + extra)
        for job in jobs:
            self._entries[job.id] = by_job[job.id]
            self._start(job)

    def _start(self, job: JobRecord) -> None:
        self._running[job.id] = asyncio.create_task(self._run(job), name=f"knora-job-{job.id}")

    async def _from_the_table(self, free: int, exc: BaseException) -> None:
        """Redis is unreachable: one claim round straight from the table (the in-process queue's), then a
        poll's wait."""
        if self.redis_ok is not False:
            log.warning("job queue: Redis unreachable (%s); claiming from the database every %.1f s until it "
                        "is back", exc, self._poll)
        self.redis_ok = False
        try:
            stale = utcnow() - timedelta(seconds=self._lease)
            jobs = await self._repo.claim_batch(list(self._handlers), stale, free)
        except Exception:
            log.exception("job dispatcher: claim failed")
            jobs = []
        for job in jobs:
            self._start(job)
        await _wait(self._wake, self._poll)

    # --- running and finishing ------------------------------------------------------------------------------
    async def _run(self, job: JobRecord) -> None:
        try:
            await super()._run(job)
        except asyncio.CancelledError:  # a stop: the row was refunded; the entry is handed to another replica
            entry = self._entries.pop(job.id, None)
            if entry is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._republish(job.id, entry))
            raise
        if job.id in self._finished:
            self._done.add(job.id)
            self._finish_wake.set()  # row and entry removed together by the finisher
            return
        # failed for good, or requeued with a backoff: the entry goes, and the relay publishes the row again
        # once it is due (every replica's relay wakes then)
        entry = self._entries.pop(job.id, None)
        with contextlib.suppress(RedisError, OSError, RuntimeError):
            if entry is not None:
                await self._drop([(job.id, entry)])
            await self._redis().zadd(self._due, {job.id: time.time() + self.backoff(job.attempts)})
        self._publish_wake.set()  # this relay's wait is cut to the due time (the others' within a poll)

    async def _finish_loop(self) -> None:
        """Deletes finished jobs' rows in one statement per round, then their entries."""
        while not self._stopping:
            await self._finish_wake.wait()
            self._finish_wake.clear()
            done = list(self._finished)
            if not done:
                continue
            try:
                await self._repo.finish_many(done)
            except Exception:
                log.exception("job queue: removing finished jobs failed")
                await asyncio.sleep(self._poll)
                self._finish_wake.set()
                continue
            pairs = [(job_id, self._entries.pop(job_id)) for job_id in done if job_id in self._entries]
            gone = set(done)
            self._done -= gone
            with contextlib.suppress(RedisError, OSError):
                await self._drop(pairs)
            self._finished = [j for j in self._finished if j not in gone]
            self._wake.set()
            self._publish_wake.set()  # rows behind the relay's batch may be claimable now

    async def _heartbeat(self, job_id: str) -> None:
        """The row first, then the entry: an entry idle for a lease always has a stale row."""
        while True:
            await asyncio.sleep(self._lease / 3)
            with contextlib.suppress(Exception):
                await self._repo.heartbeat(job_id)
            entry = self._entries.get(job_id)
            if entry is not None:
                with contextlib.suppress(Exception):
                    await self._redis().xclaim(self.stream, GROUP, self.consumer, 0, [entry], justid=True)
