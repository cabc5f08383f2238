"""``KNORA_JOB_QUEUE=redis``: jobs stay rows of the ``jobs`` table (committed with their document); Redis
Streams carry their wake-up and claim. Two queues on one real PostgreSQL database and one real Redis (a key
prefix of this test's own) stand for two replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.adapters.db.repos.jobs import SqlJobRepo
from knora.adapters.jobs.redis import GROUP, RedisJobQueue
from knora.domain.common import utcnow
from tests.conftest import REDIS_URL
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
async def repo(pg_url: str) -> AsyncIterator[SqlJobRepo]:
    engine = make_engine(pg_url)
    await migrate(engine)
    yield SqlJobRepo(make_sessionmaker(engine))
    await engine.dispose()


@pytest.fixture
async def r() -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()


def queue(repo: SqlJobRepo, prefix: str, **kw: Any) -> RedisJobQueue:
    return RedisJobQueue(repo, REDIS_URL, prefix=prefix, **kw)


async def drained(r: aioredis.Redis, q: RedisJobQueue) -> bool:
    """Nothing left in Redis for finished jobs: no entry, nothing pending, no publication mark."""
    pending = await r.xpending(q.stream, GROUP)
    marks = await r.hlen(f"{q.stream}:inflight")
    return await r.xlen(q.stream) == 0 and pending["pending"] == 0 and marks == 0


async def test_runs_jobs_and_cleans_up_after_them(repo: SqlJobRepo, redis_prefix: str,
                                                  r: aioredis.Redis) -> None:
    seen: list[int] = []

    async def handler(p: dict[str, Any]) -> None:
        seen.append(p["n"])

    q = queue(repo, redis_prefix, workers=2)
    q.register("t", handler)
    await q.start()
    try:
        for i in range(5):
            await q.enqueue("t", {"n": i})
        await q.wait_idle(30)
        assert await eventually(lambda: drained(r, q))
    finally:
        await q.stop()
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert await repo.count_active() == 0


async def test_a_committed_job_is_claimed_on_notify_without_waiting_for_a_poll(
        repo: SqlJobRepo, redis_prefix: str) -> None:
    ran = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        ran.set()

    # a lease of 10 minutes: the relay's own round comes every 200 s, so only the notice can publish it
    q = queue(repo, redis_prefix, lease_seconds=600)
    q.register("t", handler)
    await q.start()
    try:
        await asyncio.sleep(0.2)  # the start-up rounds have run and found nothing
        await repo.add("t", {}, None)  # the job row, committed with its document (``JobRequest``)
        q.notify()
        await asyncio.wait_for(ran.wait(), 30)
    finally:
        await q.stop()


async def test_a_job_published_by_one_replica_is_claimed_by_another_at_once(
        repo: SqlJobRepo, redis_prefix: str) -> None:
    release = asyncio.Event()
    ran_on: list[str] = []

    def handler(name: str) -> Any:
        async def run(p: dict[str, Any]) -> None:
            ran_on.append(f"{name}:{p['n']}")
            if p["n"] == 1:
                await release.wait()  # keeps its replica's only worker busy

        return run

    a = queue(repo, redis_prefix, workers=1, lease_seconds=600)
    b = queue(repo, redis_prefix, workers=1, lease_seconds=600)
    a.register("t", handler("a"))
    b.register("t", handler("b"))
    await a.start()
    await b.start()
    try:
        await a.enqueue("t", {"n": 1})
        await eventually(lambda: len(ran_on) == 1)
        busy = ran_on[0].split(":")[0]
        other = b if busy == "a" else a
        await (a if busy == "a" else b).enqueue("t", {"n": 2})  # published by the busy one
        assert await eventually(lambda: len(ran_on) == 2)
        assert ran_on[1] == f"{'b' if busy == 'a' else 'a'}:2"
        release.set()
        await other.wait_idle(30)
    finally:
        release.set()
        await a.stop()
        await b.stop()


async def test_a_job_committed_but_never_published_is_found_by_the_relay(
        repo: SqlJobRepo, redis_prefix: str) -> None:
    """The process that committed a document died before its publish: any replica's relay publishes it."""
    done = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        done.set()

    q = queue(repo, redis_prefix, lease_seconds=1.5)  # the relay's round every 0.5 s
    q.register("t", handler)
    await q.start()
    try:
        await asyncio.sleep(0.2)
        await repo.add("t", {}, None)  # no notice
        await asyncio.wait_for(done.wait(), 30)
    finally:
        await q.stop()


async def test_a_dead_replicas_job_moves_when_its_lease_runs_out(repo: SqlJobRepo, redis_prefix: str,
                                                                 r: aioredis.Redis) -> None:
    job_id, _ = await repo.add("t", {"n": 1}, None)
    # the replica that dies: published, read and claimed, then never heard of again
    dead = queue(repo, redis_prefix, consumer="dead")
    dead.register("t", lambda p: asyncio.sleep(0))
    await r.xgroup_create(dead.stream, GROUP, id="0", mkstream=True)
    entry = await r.xadd(dead.stream, {"job": job_id})
    await r.hset(f"{dead.stream}:inflight", job_id, entry)
    got = await r.xreadgroup(GROUP, "dead", {dead.stream: ">"}, count=1)
    assert got[0][1][0][0] == entry
    assert [j.id for j in await repo.claim_ids([job_id], ["t"], utcnow() - timedelta(seconds=60))] == [job_id]

    ran: list[dict[str, Any]] = []

    async def handler(p: dict[str, Any]) -> None:
        ran.append(p)

    q = queue(repo, redis_prefix, lease_seconds=1.5)  # no heartbeat for 1.5 s: the job is taken over
    q.register("t", handler)
    await q.start()
    try:
        assert await eventually(lambda: len(ran) == 1)
        await q.wait_idle(30)
        assert await eventually(lambda: drained(r, q))
    finally:
        await q.stop()
    assert ran == [{"n": 1}]


async def test_a_running_job_keeps_its_lease_by_heartbeats(repo: SqlJobRepo, redis_prefix: str) -> None:
    """A job longer than its lease is not taken over while its replica lives."""
    starts: list[str] = []
    release = asyncio.Event()

    def handler(name: str) -> Any:
        async def run(_p: dict[str, Any]) -> None:
            starts.append(name)
            await release.wait()

        return run

    a = queue(repo, redis_prefix, lease_seconds=0.6)
    b = queue(repo, redis_prefix, lease_seconds=0.6)
    a.register("t", handler("a"))
    b.register("t", handler("b"))
    await a.start()
    await b.start()
    try:
        await a.enqueue("t", {})
        await eventually(lambda: starts)
        await asyncio.sleep(3.0)  # five leases
        assert len(starts) == 1
        release.set()
        await a.wait_idle(30)
        await b.wait_idle(30)
    finally:
        release.set()
        await a.stop()
        await b.stop()


async def test_an_entry_delivered_twice_runs_its_job_once(repo: SqlJobRepo, redis_prefix: str,
                                                         r: aioredis.Redis) -> None:
    ran: list[int] = []
    release = asyncio.Event()

    async def handler(p: dict[str, Any]) -> None:
        ran.append(p["n"])
        await release.wait()

    q = queue(repo, redis_prefix, workers=4, lease_seconds=600)
    q.register("t", handler)
    await q.start()
    try:
        job_id = await q.enqueue("t", {"n": 7})
        await eventually(lambda: ran)
        await r.xadd(q.stream, {"job": job_id})  # a duplicate (a failover lost an ack, a republish)

        async def one_entry() -> bool:
            return await r.xlen(q.stream) == 1

        assert await eventually(one_entry)  # the duplicate is dropped
        release.set()
        await q.wait_idle(30)
        assert await eventually(lambda: drained(r, q))
    finally:
        release.set()
        await q.stop()
    assert ran == [7]


async def test_a_failing_job_is_retried_with_backoff_then_given_up(repo: SqlJobRepo, redis_prefix: str,
                                                                   r: aioredis.Redis) -> None:
    tries: list[float] = []
    gave_up: list[str] = []

    async def handler(_p: dict[str, Any]) -> None:
        tries.append(asyncio.get_running_loop().time())
        raise RuntimeError("boom")

    async def give_up(_p: dict[str, Any], reason: str) -> None:
        gave_up.append(reason)

    q = queue(repo, redis_prefix, max_attempts=3, retry_seconds=0.3, lease_seconds=600)
    q.register("t", handler, give_up=give_up)
    await q.start()
    try:
        await q.enqueue("t", {})
        assert await eventually(lambda: gave_up)
        await q.wait_idle(30)
        assert await eventually(lambda: drained(r, q))
    finally:
        await q.stop()
    assert len(tries) == 3
    assert tries[1] - tries[0] >= 0.3  # the backoff, doubling: 0.3 s, then 0.6 s
    assert tries[2] - tries[1] >= 0.6
    assert gave_up == ["it failed 3 times, last with RuntimeError: boom"]


async def test_a_graceful_stop_hands_its_job_to_another_replica_at_once(repo: SqlJobRepo, redis_prefix: str,
                                                                        r: aioredis.Redis) -> None:
    started = asyncio.Event()

    async def forever(_p: dict[str, Any]) -> None:
        started.set()
        await asyncio.Event().wait()

    ran = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        ran.set()

    a = queue(repo, redis_prefix, lease_seconds=600)  # no takeover within the test: only the hand-back
    a.register("t", forever)
    await a.start()
    await a.enqueue("t", {})
    await asyncio.wait_for(started.wait(), 30)
    await a.stop()
    consumers = {c["name"] for c in await r.xinfo_consumers(a.stream, GROUP)}
    assert a.consumer.encode() not in consumers  # it left the group
    b = queue(repo, redis_prefix, lease_seconds=600)
    b.register("t", handler)
    await b.start()
    try:
        await asyncio.wait_for(ran.wait(), 30)
        await b.wait_idle(30)
    finally:
        await b.stop()


async def test_without_redis_jobs_are_claimed_from_the_table(repo: SqlJobRepo, redis_prefix: str) -> None:
    ran = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        ran.set()

    q = RedisJobQueue(repo, "redis://127.0.0.1:1/0", prefix=redis_prefix, lease_seconds=1.5)
    q.register("t", handler)
    await q.start()
    try:
        await q.enqueue("t", {})
        await asyncio.wait_for(ran.wait(), 30)
        assert q.redis_ok is False
    finally:
        await q.stop()


async def test_a_job_whose_entry_was_lost_is_published_again(repo: SqlJobRepo, redis_prefix: str,
                                                             r: aioredis.Redis) -> None:
    """Redis restarted without persistence after the job was published: its mark says published, the stream
    has no such entry; the relay's periodic round publishes it again."""
    done = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        done.set()

    q = queue(repo, redis_prefix, lease_seconds=1.5)
    q.register("t", handler)
    job_id, _ = await repo.add("t", {}, None)
    await r.hset(f"{q.stream}:inflight", job_id, "1-1")  # an entry that is not in the stream
    await q.start()
    try:
        await asyncio.wait_for(done.wait(), 30)
        await q.wait_idle(30)
        assert await eventually(lambda: drained(r, q))
    finally:
        await q.stop()
