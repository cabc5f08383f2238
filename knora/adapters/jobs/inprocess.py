"""The embedded profile's job queue: asyncio workers in this process, jobs durable in the ``jobs`` table.

Enqueue writes a row and wakes a worker; workers claim rows atomically, heartbeat while running and delete the
row when done. Pending work therefore survives a restart: a new process finds queued rows (and running rows whose
heartbeat went stale, i.e. whose process died) and runs them. Another process on the same database (the CLI next
to a server) is noticed by polling every ``poll_seconds`` while idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from knora.domain.common import utcnow
from knora.ports.jobs import JobHandler
from knora.ports.store import JobRecord, JobRepo

log = logging.getLogger(__name__)


class InProcessJobQueue:
    def __init__(self, repo: JobRepo, *, workers: int = 4, lease_seconds: float = 60.0,
                 poll_seconds: float = 2.0, max_attempts: int = 3) -> None:
        self._repo = repo
        self._handlers: dict[str, JobHandler] = {}
        self._workers = max(1, workers)
        self._lease = lease_seconds
        self._poll = poll_seconds
        self._max_attempts = max_attempts
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._running: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    def register(self, kind: str, handler: JobHandler) -> None:
        self._handlers[kind] = handler

    async def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None) -> str:
        if kind not in self._handlers:
            raise ValueError(f"no handler registered for job kind {kind!r}")
        job_id, _created = await self._repo.add(kind, payload, key)
        self._wake.set()
        return job_id

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
        """Cancel the dispatcher and running jobs; a job cut short goes back to ``queued`` for the next start."""
        self._stopping = True
        tasks = self._tasks + list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._running.clear()

    async def wait_idle(self, timeout: float | None = None) -> None:
        async def _wait() -> None:
            while True:
                if not self._running and await self._repo.count_active() == 0:
                    return
                self._wake.set()
                await asyncio.sleep(0.05)

        await asyncio.wait_for(_wait(), timeout)

    async def _dispatch(self) -> None:
        """One claimer, up to ``workers`` jobs at once: claims never race each other inside this process."""
        slots = asyncio.Semaphore(self._workers)
        while not self._stopping:
            await slots.acquire()
            claim = asyncio.ensure_future(
                self._repo.claim_next(list(self._handlers), utcnow() - timedelta(seconds=self._lease)))
            try:
                job = await asyncio.shield(claim)
            except asyncio.CancelledError:
                # Stopped mid-claim: the claim may still commit; hand the job back rather than strand it "running".
                with contextlib.suppress(Exception):
                    claimed = await claim
                    if claimed is not None:
                        await self._repo.requeue(claimed.id)
                raise
            except Exception:
                log.exception("job dispatcher: claim failed")
                job = None
            if job is None:
                slots.release()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll)
                continue
            task = asyncio.create_task(self._run(job), name=f"knora-job-{job.id}")
            self._running[job.id] = task
            task.add_done_callback(self._on_done(job.id, slots))

    def _on_done(self, job_id: str, slots: asyncio.Semaphore) -> Callable[[asyncio.Task[None]], None]:
        def _done(_task: asyncio.Task[None]) -> None:
            self._running.pop(job_id, None)
            slots.release()

        return _done

    async def _run(self, job: JobRecord) -> None:
        handler = self._handlers[job.kind]
        beat = asyncio.create_task(self._heartbeat(job.id))
        try:
            await handler(job.payload)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._repo.requeue(job.id))
            raise
        except Exception as exc:
            log.exception("job %s (%s) failed", job.id, job.kind)
            if job.attempts < self._max_attempts:
                await self._repo.requeue(job.id)
            else:
                await self._repo.fail(job.id, f"{type(exc).__name__}: {exc}")
        else:
            await self._repo.finish(job.id)
        finally:
            beat.cancel()

    async def _heartbeat(self, job_id: str) -> None:
        while True:
            await asyncio.sleep(self._lease / 3)
            with contextlib.suppress(Exception):
                await self._repo.heartbeat(job_id)
