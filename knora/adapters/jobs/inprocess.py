"""The embedded profile's job queue: asyncio tasks in this process, jobs durable in the ``jobs`` table.

Enqueue writes a row and wakes the dispatcher. The dispatcher is the process's only claimer: in one
transaction it deletes the jobs finished since its last round and claims as many queued jobs as there are free
slots, so a busy queue costs one write per batch, not two per job. Running jobs heartbeat. Pending work
survives a restart: a new process finds queued rows (and running rows whose heartbeat went stale, i.e. whose
process died) and runs them. Another process on the same database (the CLI next to a server) is noticed by
polling every ``poll_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import Any

from knora.domain.common import utcnow
from knora.ports.jobs import GiveUpHandler, JobHandler
from knora.ports.store import JobRecord, JobRepo

log = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 300.0


class InProcessJobQueue:
    def __init__(self, repo: JobRepo, *, workers: int = 4, lease_seconds: float = 60.0,
                 poll_seconds: float = 2.0, max_attempts: int = 3, retry_seconds: float = 2.0) -> None:
        self._repo = repo
        self._retry = retry_seconds
        self._handlers: dict[str, JobHandler] = {}
        self._give_up: dict[str, GiveUpHandler] = {}
        self._workers = max(1, workers)
        self._lease = lease_seconds
        self._poll = poll_seconds
        self._max_attempts = max_attempts
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._running: dict[str, asyncio.Task[None]] = {}
        self._finished: list[str] = []
        self._stopping = False

    def backoff(self, attempts: int) -> float:
        """Seconds before attempt ``attempts + 1`` of a job that failed: doubling from ``retry_seconds``,
        at most ``MAX_BACKOFF_SECONDS``."""
        return float(min(self._retry * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS))

    def register(self, kind: str, handler: JobHandler, *, give_up: GiveUpHandler | None = None) -> None:
        self._handlers[kind] = handler
        if give_up is not None:
            self._give_up[kind] = give_up

    async def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None) -> str:
        if kind not in self._handlers:
            raise ValueError(f"no handler registered for job kind {kind!r}")
        job_id, _created = await self._repo.add(kind, payload, key)
        self._wake.set()
        return job_id

    def notify(self) -> None:
        self._wake.set()

    @property
    def started(self) -> bool:
        return bool(self._tasks)

    async def start(self) -> None:
        if self._tasks:
            return
        self._stopping = False
        self._tasks = [asyncio.create_task(self._dispatch(), name="knora-job-dispatcher")]
        self._wake.set()

    async def stop(self) -> None:
        """Cancel the dispatcher and running jobs; a job cut short goes back to ``queued`` for the next
        start."""
        self._stopping = True
        tasks = self._tasks + list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._running.clear()
        finished, self._finished = self._finished, []
        with contextlib.suppress(Exception):
            await self._repo.finish_many(finished)

    async def wait_idle(self, timeout: float | None = None) -> None:
        async def _wait() -> None:
            while True:
                if not self._running and not self._finished and await self._repo.count_active() == 0:
                    return
                self._wake.set()
                await asyncio.sleep(0.05)

        await asyncio.wait_for(_wait(), timeout)

    async def _dispatch(self) -> None:
        """The one claimer of this process: claims as many jobs as there are free slots, and removes the jobs
        finished since the last round, in one transaction; then sleeps until woken (enqueue, a job finishing)
        or the poll interval passes (work enqueued by another process)."""
        while not self._stopping:
            free = self._workers - len(self._running)
            self._wake.clear()
            if free <= 0 and not self._finished:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll)
                continue
            finished, self._finished = self._finished, []
            claim = asyncio.ensure_future(self._repo.claim_batch(
                list(self._handlers), utcnow() - timedelta(seconds=self._lease), max(free, 0), finished))
            try:
                jobs = await asyncio.shield(claim)
            except asyncio.CancelledError:
                # Stopped mid-claim: the claim may still commit; hand its jobs back rather than strand them.
                with contextlib.suppress(Exception):
                    for job in await claim:
                        await self._repo.requeue(job.id)
                raise
            except Exception:
                log.exception("job dispatcher: claim failed")
                self._finished.extend(finished)
                jobs = []
            for job in jobs:
                task = asyncio.create_task(self._run(job), name=f"knora-job-{job.id}")
                self._running[job.id] = task
            if not jobs and not self._wake.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll)

    async def _run(self, job: JobRecord) -> None:
        handler = self._handlers[job.kind]
        beat = asyncio.create_task(self._heartbeat(job.id))
        done = False
        try:
            if job.attempts > self._max_attempts:
                await self._abandon(job)
                return
            await handler(job.payload)
            done = True
        except asyncio.CancelledError:  # a shutdown: not the job's fault, its attempt is given back
            with contextlib.suppress(Exception):
                await asyncio.shield(self._repo.requeue(job.id, refund=True))
            raise
        except Exception as exc:
            log.exception("job %s (%s) failed", job.id, job.kind)
            if job.attempts < self._max_attempts:
                await self._repo.requeue(job.id, delay_seconds=self.backoff(job.attempts))
            else:  # the dead letter: failed, and its kind says so where users look (a document's status)
                reason = f"it failed {job.attempts} times, last with {type(exc).__name__}: {exc}"
                give_up = self._give_up.get(job.kind)
                if give_up is not None:
                    with contextlib.suppress(Exception):
                        await give_up(job.payload, reason)
                await self._repo.fail(job.id, reason)
        finally:
            beat.cancel()
            self._running.pop(job.id, None)
            if done:
                self._finished.append(job.id)  # removed by the dispatcher's next transaction
            self._wake.set()

    async def _abandon(self, job: JobRecord) -> None:
        """A job claimed more often than ``max_attempts`` never finished: each time, its process died under it
        (killed, crashed, out of memory, restarted mid-job). Running it again would likely end the same way,
        across every restart; it is failed, and its kind's ``give_up`` records why."""
        starts = job.attempts - 1
        reason = (f"it was started {starts} time{'' if starts == 1 else 's'} and each time the process "
                  "running it ended before it finished")
        log.warning("job %s (%s) given up: %s", job.id, job.kind, reason)
        give_up = self._give_up.get(job.kind)
        if give_up is not None:
            await give_up(job.payload, reason)
        await self._repo.fail(job.id, reason)

    async def _heartbeat(self, job_id: str) -> None:
        while True:
            await asyncio.sleep(self._lease / 3)
            with contextlib.suppress(Exception):
                await self._repo.heartbeat(job_id)
