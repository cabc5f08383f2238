"""Job queues by name (``settings.job_queue``).

``inprocess`` (the embedded default), ``postgres`` (LISTEN/NOTIFY and short leases, for several replicas) and
``redis`` (a Redis Streams consumer group fed from the table, for several replicas) share the ``jobs`` table:
it is the record of truth whichever queue claims from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from knora.domain.registry import Registry
from knora.ports.jobs import JobQueue
from knora.ports.store import JobRepo


@dataclass(frozen=True)
class QueueOptions:
    workers: int = 4  # jobs run at once
    max_attempts: int = 3  # starts of one job before it is given up
    lease_seconds: float | None = None  # a running job without a heartbeat this long belongs to a dead
    # process (None: the queue's own default: 60 s in-process, 10 s on PostgreSQL and Redis)
    database_url: str = ""  # the database the jobs table is in (the postgres queue LISTENs on it)
    redis_url: str = ""  # the redis queue's server
    redis_prefix: str = "knora"  # its keys' prefix


JobQueueFactory = Callable[[JobRepo, QueueOptions], JobQueue]


def _inprocess(repo: JobRepo, o: QueueOptions) -> JobQueue:
    from knora.adapters.jobs.inprocess import InProcessJobQueue

    return InProcessJobQueue(repo, workers=o.workers, max_attempts=o.max_attempts,
                             lease_seconds=o.lease_seconds or 60.0)


def _postgres(repo: JobRepo, o: QueueOptions) -> JobQueue:
    from knora.adapters.jobs.postgres import PostgresJobQueue
    from knora.adapters.retrieval.postgres import asyncpg_dsn

    if not o.database_url.startswith(("postgresql", "postgres")):
        raise ValueError("job_queue=postgres needs KNORA_DATABASE_URL=postgresql+asyncpg://…")
    return PostgresJobQueue(repo, asyncpg_dsn(o.database_url), workers=o.workers, max_attempts=o.max_attempts,
                            lease_seconds=o.lease_seconds or 10.0)


def _redis(repo: JobRepo, o: QueueOptions) -> JobQueue:
    from knora.adapters.jobs.redis import RedisJobQueue

    if not o.redis_url:
        raise ValueError("job_queue=redis needs KNORA_REDIS_URL=redis://…")
    return RedisJobQueue(repo, o.redis_url, prefix=o.redis_prefix, workers=o.workers,
                         max_attempts=o.max_attempts, lease_seconds=o.lease_seconds or 10.0)


JOB_QUEUES: Registry[JobQueueFactory] = Registry("job queue", {"inprocess": _inprocess, "postgres": _postgres,
                                                               "redis": _redis})


def build_job_queue(name: str, repo: JobRepo, *, workers: int, max_attempts: int = 3,
                    lease_seconds: float | None = None, database_url: str = "", redis_url: str = "",
                    redis_prefix: str = "knora") -> JobQueue:
    """The queue named ``name`` over the ``jobs`` table behind ``repo``; ValueError for an unknown name."""
    return JOB_QUEUES.get(name)(repo, QueueOptions(workers, max_attempts, lease_seconds, database_url,
                                                   redis_url, redis_prefix))
