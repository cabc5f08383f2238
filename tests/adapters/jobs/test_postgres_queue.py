"""``KNORA_JOB_QUEUE=postgres``: a job committed by any process wakes every replica's queue through
LISTEN/NOTIFY (no polling delay), and a job whose replica died moves to another when its short lease runs out.
Two queues on one real PostgreSQL database stand for two replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.adapters.db.repos.jobs import SqlJobRepo
from knora.adapters.jobs.postgres import PostgresJobQueue
from knora.adapters.retrieval.postgres import asyncpg_dsn
from knora.domain.common import utcnow

pytestmark = pytest.mark.integration


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[tuple[SqlJobRepo, str]]:
    engine = make_engine(pg_url)
    await migrate(engine)
    yield SqlJobRepo(make_sessionmaker(engine)), asyncpg_dsn(pg_url)
    await engine.dispose()


async def test_a_job_added_by_another_process_is_claimed_without_waiting_for_a_poll(
        pg: tuple[SqlJobRepo, str]) -> None:
    repo, dsn = pg
    ran = asyncio.Event()

    async def handler(_p: dict[str, Any]) -> None:
        ran.set()

    # a lease of 10 minutes: the queue's own poll comes every 200 s, so only the notification can wake it
    q = PostgresJobQueue(repo, dsn, lease_seconds=600)
    q.register("t", handler)
    await q.start()
    try:
        assert q.listening
        await asyncio.sleep(0.2)  # the start-up claim round has run and found nothing
        await repo.add("t", {}, None)  # as another replica's transaction (e.g. a new document's job) does
        await asyncio.wait_for(ran.wait(), 30)
    finally:
        await q.stop()


async def test_a_dead_replicas_job_moves_when_its_lease_runs_out(pg: tuple[SqlJobRepo, str]) -> None:
    repo, dsn = pg
    job_id, _ = await repo.add("t", {"n": 1}, None)
    claimed = await repo.claim_batch(["t"], utcnow() - timedelta(seconds=60), 1)  # the replica that dies
    assert [j.id for j in claimed] == [job_id]
    ran: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def handler(p: dict[str, Any]) -> None:
        ran.append(p)
        done.set()

    q = PostgresJobQueue(repo, dsn, lease_seconds=1.5)  # it never heartbeats: stale after 1.5 s
    q.register("t", handler)
    await q.start()
    try:
        await asyncio.wait_for(done.wait(), 30)
    finally:
        await q.stop()
    assert ran == [{"n": 1}]
    assert await repo.count_active() == 0
