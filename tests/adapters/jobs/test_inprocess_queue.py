"""The durable in-process job queue: runs jobs, de-duplicates by key, survives restarts and dead processes."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.adapters.db.repos.jobs import SqlJobRepo
from knora.adapters.jobs.inprocess import InProcessJobQueue
from knora.domain.common import utcnow

pytestmark = pytest.mark.integration


@pytest.fixture
async def repo(db_url: str) -> Any:
    engine = make_engine(db_url)
    await migrate(engine)
    yield SqlJobRepo(make_sessionmaker(engine))
    await engine.dispose()


class TestInProcessJobQueue:
    async def test_runs_jobs_and_removes_them(self, repo: SqlJobRepo) -> None:
        seen: list[int] = []

        async def handler(payload: dict[str, Any]) -> None:
            seen.append(payload["n"])

        q = InProcessJobQueue(repo, workers=2)
        q.register("t", handler)
        await q.start()
        for i in range(5):
            await q.enqueue("t", {"n": i})
        await q.wait_idle(10)
        await q.stop()
        assert sorted(seen) == [0, 1, 2, 3, 4]
        assert await repo.count_active() == 0

    async def test_queued_job_with_same_key_is_not_added_twice(self, repo: SqlJobRepo) -> None:
        q = InProcessJobQueue(repo)
        q.register("t", lambda p: asyncio.sleep(0))
        a = await q.enqueue("t", {}, key="k")
        b = await q.enqueue("t", {}, key="k")
        assert a == b
        assert await repo.count_active() == 1

    async def test_unknown_kind_is_refused(self, repo: SqlJobRepo) -> None:
        with pytest.raises(ValueError):  # noqa: PT011 - the type is the contract, not the message
            await InProcessJobQueue(repo).enqueue("nope", {})

    async def test_job_enqueued_before_a_restart_runs_after_it(self, db_url: str, tmp_path: Path) -> None:
        engine = make_engine(db_url)
        await migrate(engine)
        first = InProcessJobQueue(SqlJobRepo(make_sessionmaker(engine)))
        first.register("t", lambda p: asyncio.sleep(0))
        await first.enqueue("t", {"n": 1})
        await first.stop()  # never started: the job is only in the table
        await engine.dispose()

        done: list[int] = []

        async def handler(payload: dict[str, Any]) -> None:
            done.append(payload["n"])

        engine2 = make_engine(db_url)
        second = InProcessJobQueue(SqlJobRepo(make_sessionmaker(engine2)))
        second.register("t", handler)
        await second.start()
        await second.wait_idle(10)
        await second.stop()
        await engine2.dispose()
        assert done == [1]

    async def test_job_cut_short_by_stop_is_requeued(self, repo: SqlJobRepo) -> None:
        started = asyncio.Event()

        async def slow(_p: dict[str, Any]) -> None:
            started.set()
            await asyncio.sleep(60)

        q = InProcessJobQueue(repo)
        q.register("t", slow)
        await q.start()
        await q.enqueue("t", {})
        await asyncio.wait_for(started.wait(), 10)
        await q.stop()
        job = await repo.claim_next(["t"], utcnow() - timedelta(hours=1))
        assert job is not None
        # handed back, and a shutdown is not the job's fault: its attempt is given back too (a second worker
        # may have re-claimed it before the stop)
        assert job.attempts in (1, 2)

    async def test_a_job_whose_process_kept_dying_is_given_up_not_run_again(self, repo: SqlJobRepo) -> None:
        """Each claim of a job whose process died (kill -9 mid-job, a crash) counts; past ``max_attempts`` the
        job is failed and its kind's ``give_up`` says why, instead of running it on every restart forever."""
        await repo.add("t", {"n": 1}, None)
        for _ in range(2):  # two processes claimed it and died before finishing (their leases lapsed)
            job = await repo.claim_next(["t"], utcnow() + timedelta(seconds=1))
            assert job is not None
        await repo.requeue(job.id)  # claimable now, without waiting for a lease to lapse
        ran: list[dict[str, Any]] = []
        given_up: list[tuple[dict[str, Any], str]] = []

        async def run(p: dict[str, Any]) -> None:
            ran.append(p)

        async def give_up(p: dict[str, Any], reason: str) -> None:
            given_up.append((p, reason))

        q = InProcessJobQueue(repo, max_attempts=2)
        q.register("t", run, give_up=give_up)
        await q.start()
        await q.wait_idle(10)
        await q.stop()
        assert ran == []
        assert given_up == [({"n": 1}, "it was started 2 times and each time the process running it ended "
                                       "before it finished")]
        assert await repo.count_active() == 0

    async def test_running_job_of_a_dead_process_is_reclaimed_when_stale(self, repo: SqlJobRepo) -> None:
        await repo.add("t", {}, None)
        claimed = await repo.claim_next(["t"], utcnow() - timedelta(hours=1))
        assert claimed is not None
        # Heartbeat is fresh: nobody else may take it.
        assert await repo.claim_next(["t"], utcnow() - timedelta(hours=1)) is None
        # Stale (the cutoff is in the future relative to its heartbeat): reclaimable.
        again = await repo.claim_next(["t"], utcnow() + timedelta(seconds=1))
        assert again is not None
        assert again.id == claimed.id

    async def test_failing_handler_is_retried_then_marked_failed(self, repo: SqlJobRepo) -> None:
        calls = 0

        async def broken(_p: dict[str, Any]) -> None:
            nonlocal calls
            calls += 1
            raise RuntimeError("boom")

        q = InProcessJobQueue(repo, max_attempts=2)
        q.register("t", broken)
        await q.start()
        await q.enqueue("t", {})
        await q.wait_idle(10)
        await q.stop()
        assert calls == 2
        assert await repo.count_active() == 0


async def test_a_failed_job_waits_longer_each_time_then_its_kind_hears_it(repo: SqlJobRepo) -> None:
    calls: list[Any] = []
    given_up: list[str] = []

    async def broken(_p: dict[str, Any]) -> None:
        calls.append(utcnow())
        raise RuntimeError("the model server is down")

    async def give_up(_p: dict[str, Any], reason: str) -> None:
        given_up.append(reason)

    q = InProcessJobQueue(repo, max_attempts=3, retry_seconds=0.2, poll_seconds=0.05)
    q.register("t", broken, give_up=give_up)
    assert [q.backoff(n) for n in (1, 2, 3)] == [0.2, 0.4, 0.8]
    assert q.backoff(40) == 300.0  # capped
    await q.start()
    await q.enqueue("t", {})
    await q.wait_idle(30)
    await q.stop()
    assert len(calls) == 3
    # each retry came no earlier than its backoff (the queue may be later, never earlier)
    assert calls[1] - calls[0] >= timedelta(seconds=0.2)
    assert calls[2] - calls[1] >= timedelta(seconds=0.4)
    assert given_up == ["it failed 3 times, last with RuntimeError: the model server is down"]
