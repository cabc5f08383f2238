"""Issue 16: ingestion on ``KNORA_JOB_QUEUE=redis`` with two replicas (two containers on one PostgreSQL
database, one Redis, the PostgreSQL blob store): uploads through one complete on either; a cancelled parse's
job does nothing; a job whose process kept dying ends its document ``failed`` with the reason (the dead
letter)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from knora.adapters.jobs.redis import RedisJobQueue
from knora.domain.common import utcnow
from knora.domain.knowledge import ParseStatus
from knora.root import Services
from knora.services.ingest.batch import KnowledgeBatchService
from knora.services.ingest.service import JOB_KIND
from knora.settings import Settings
from tests.conftest import RECORDING, started, stop_jobs
from tests.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.redis]

TEXT = "The Redis queue carries the wake-up; the jobs table stays the record. " * 20


def _settings(make_settings: Callable[..., Settings], url: str, prefix: str, data: Path) -> Settings:
    return make_settings(database_url=url, job_queue="redis", redis_prefix=prefix, blob_store="postgres",
                         data_dir=data, replicas=2)


async def test_uploads_through_one_replica_complete_across_two(make_settings: Callable[..., Settings],
                                                               pg_url: str, redis_prefix: str,
                                                               tmp_path: Path) -> None:
    async with started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "a"), RECORDING) as a, \
            started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "b"), RECORDING) as b:
        assert isinstance(a.jobs, RedisJobQueue)
        tid = a.default_tenant_id
        kb = await a.kb_service.create(tid, {"name": "redis queue"})
        docs = [await a.ingest_service.add_file(tid, kb.id, f"doc{i}.md", f"{i}. {TEXT}".encode())
                for i in range(12)]

        async def all_done() -> bool:
            got = [await b.repos.knowledge.get(None, k.id) for k in docs]
            return all(k is not None and k.parse_status == ParseStatus.COMPLETED for k in got)

        assert await eventually(all_done, timeout=120)
        await a.jobs.wait_idle(30)
        await b.jobs.wait_idle(30)
        assert await a.repos.jobs.count_active() == 0
        active = [ParseStatus.PENDING, ParseStatus.PROCESSING]
        assert await a.repos.knowledge.without_job(JOB_KIND, active) == []


async def test_a_cancelled_parse_is_not_run_by_the_replica_that_claims_it(
        make_settings: Callable[..., Settings], pg_url: str, redis_prefix: str, tmp_path: Path) -> None:
    async with started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "a"), RECORDING) as a:
        await stop_jobs(a)  # this replica only accepts
        tid = a.default_tenant_id
        kb = await a.kb_service.create(tid, {"name": "cancel"})
        k = await a.ingest_service.add_file(tid, kb.id, "cancel.md", TEXT.encode())
        cancelled = await KnowledgeBatchService(a.ingest_service).cancel_parse(tid, k.id)
        assert cancelled.parse_status == ParseStatus.CANCELLED
        async with started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "b"), RECORDING) as b:
            assert await eventually(_no_jobs(b)), "the cancelled document's job was not consumed"
            got = await b.repos.knowledge.get(None, k.id)
            assert got.parse_status == ParseStatus.CANCELLED
            assert await b.repos.chunks.ids_for_knowledge(k.id) == []


def _no_jobs(c: Services) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await c.repos.jobs.count_active() == 0

    return check


async def test_a_job_whose_process_kept_dying_fails_its_document_with_the_reason(
        make_settings: Callable[..., Settings], pg_url: str, redis_prefix: str, tmp_path: Path) -> None:
    async with started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "a"), RECORDING) as a:
        await stop_jobs(a)
        tid = a.default_tenant_id
        kb = await a.kb_service.create(tid, {"name": "dead letter"})
        k = await a.ingest_service.add_file(tid, kb.id, "dies.md", TEXT.encode())
        jobs = a.repos.jobs
        for _ in range(a.settings.ingest_max_attempts):  # claimed, and its process died under it, each time
            [job] = await jobs.claim_ids(await jobs.claimable_ids([JOB_KIND], utcnow(), 1), [JOB_KIND],
                                         utcnow())
            await jobs.requeue(job.id)
        async with started(_settings(make_settings, pg_url, redis_prefix, tmp_path / "b"), RECORDING) as b:

            async def failed() -> bool:
                got = await b.repos.knowledge.get(None, k.id)
                return got is not None and got.parse_status == ParseStatus.FAILED

            assert await eventually(failed, timeout=60)
            got = await b.repos.knowledge.get(None, k.id)
            assert "started 3 times" in got.error_message
            assert "re-parse to try again" in got.error_message

