"""Job queues by name (``settings.job_queue``).

``redis`` is accepted (the scale profile names it) but not implemented yet: it builds the durable in-process
queue on the database and says so, as before the registry existed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from knora.domain.registry import Registry
from knora.ports.jobs import JobQueue
from knora.ports.store import JobRepo

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class QueueOptions:
    workers: int = 4  # jobs run at once
    max_attempts: int = 3  # starts of one job before it is given up
    lease_seconds: float = 60.0  # a running job without a heartbeat this long belongs to a dead process


JobQueueFactory = Callable[[JobRepo, QueueOptions], JobQueue]


def _inprocess(repo: JobRepo, o: QueueOptions) -> JobQueue:
    from knora.adapters.jobs.inprocess import InProcessJobQueue

    return InProcessJobQueue(repo, workers=o.workers, max_attempts=o.max_attempts,
                             lease_seconds=o.lease_seconds)


def _redis(repo: JobRepo, o: QueueOptions) -> JobQueue:
    log.warning("job_queue=redis is not available yet; using the durable in-process queue on the database")
    return _inprocess(repo, o)


JOB_QUEUES: Registry[JobQueueFactory] = Registry("job queue", {"inprocess": _inprocess, "redis": _redis})


def build_job_queue(name: str, repo: JobRepo, *, workers: int, max_attempts: int = 3,
                    lease_seconds: float = 60.0) -> JobQueue:
    """The queue named ``name`` over the ``jobs`` table behind ``repo``; ValueError for an unknown name."""
    return JOB_QUEUES.get(name)(repo, QueueOptions(workers, max_attempts, lease_seconds))
