"""Job queues by name (``settings.job_queue``).

``redis`` is accepted (the scale profile names it) but not implemented yet: it builds the durable in-process
queue on the database and says so, as before the registry existed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from knora.domain.registry import Registry
from knora.ports.jobs import JobQueue
from knora.ports.store import JobRepo

log = logging.getLogger(__name__)

JobQueueFactory = Callable[[JobRepo, int], JobQueue]


def _inprocess(repo: JobRepo, workers: int) -> JobQueue:
    from knora.adapters.jobs.inprocess import InProcessJobQueue

    return InProcessJobQueue(repo, workers=workers)


def _redis(repo: JobRepo, workers: int) -> JobQueue:
    log.warning("job_queue=redis is not available yet; using the durable in-process queue on the database")
    return _inprocess(repo, workers)


JOB_QUEUES: Registry[JobQueueFactory] = Registry("job queue", {"inprocess": _inprocess, "redis": _redis})


def build_job_queue(name: str, repo: JobRepo, *, workers: int) -> JobQueue:
    """The queue named ``name`` over the ``jobs`` table behind ``repo``; ValueError for an unknown name."""
    return JOB_QUEUES.get(name)(repo, workers)
