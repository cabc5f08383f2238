"""Job queues by name: ``inprocess``, ``postgres`` and ``redis``."""

from __future__ import annotations

from typing import cast

import pytest

from knora.adapters.jobs.inprocess import InProcessJobQueue
from knora.adapters.jobs.registry import JOB_QUEUES, build_job_queue
from knora.ports.store import JobRepo

pytestmark = pytest.mark.unit

_REPO = cast(JobRepo, object())  # construction stores the repo and touches nothing


def test_names() -> None:
    assert JOB_QUEUES.names() == ("inprocess", "postgres", "redis")


def test_inprocess_is_built_with_its_workers() -> None:
    queue = build_job_queue("inprocess", _REPO, workers=3)
    assert isinstance(queue, InProcessJobQueue)
    assert queue._workers == 3


def test_redis_is_a_streams_queue_with_short_leases() -> None:
    from knora.adapters.jobs.redis import RedisJobQueue

    queue = build_job_queue("redis", _REPO, workers=2, redis_url="redis://h:6379/0", redis_prefix="p")
    assert isinstance(queue, RedisJobQueue)
    assert queue._lease == 10.0
    assert queue.stream == "p:jobs"
    with pytest.raises(ValueError, match="needs KNORA_REDIS_URL"):
        build_job_queue("redis", _REPO, workers=2)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown job queue 'celery'; known: inprocess, postgres, redis"):
        build_job_queue("celery", _REPO, workers=1)


def test_postgres_needs_a_postgresql_database() -> None:
    from knora.adapters.jobs.postgres import PostgresJobQueue

    queue = build_job_queue("postgres", _REPO, workers=2, database_url="postgresql+asyncpg://u@h/db")
    assert isinstance(queue, PostgresJobQueue)
    assert queue._lease == 10.0  # short leases by default on the shared queue
    with pytest.raises(ValueError, match="needs KNORA_DATABASE_URL=postgresql"):
        build_job_queue("postgres", _REPO, workers=2, database_url="sqlite+aiosqlite:///x.db")
