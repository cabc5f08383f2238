"""``KNORA_JOB_QUEUE=postgres``: the durable queue on the ``jobs`` table, for several replicas.

What it adds to the in-process queue (whose dispatcher, claims, heartbeats and retries it keeps):

* **No polling delay.** A trigger (migration 0009) sends ``NOTIFY knora_jobs`` in the transaction that makes a
  job claimable — a new document's job included, which is committed with the document's row — and every
  replica ``LISTEN``\\s on a connection of its own: the dispatcher wakes the moment the transaction commits.
* **Short leases.** A running job heartbeats every third of ``KNORA_JOB_LEASE_SECONDS`` (10 s by default for
  this queue); a replica that died leaves its jobs claimable when the lease runs out, and the others look for
  such jobs every ``poll_seconds`` (a third of the lease), so they move within seconds, not a minute.

If the listening connection drops, the queue falls back to its poll and reconnects at each poll until it is
back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from knora.adapters.jobs.inprocess import InProcessJobQueue
from knora.ports.store import JobRepo

log = logging.getLogger(__name__)

CHANNEL = "knora_jobs"


class PostgresJobQueue(InProcessJobQueue):
    def __init__(self, repo: JobRepo, dsn: str, *, workers: int = 4, lease_seconds: float = 10.0,
                 max_attempts: int = 3, retry_seconds: float = 2.0) -> None:
        super().__init__(repo, workers=workers, lease_seconds=lease_seconds, poll_seconds=lease_seconds / 3,
                         max_attempts=max_attempts, retry_seconds=retry_seconds)
        self._dsn = dsn
        self._listener: Any = None  # an asyncpg connection while LISTEN is on
        self._watch: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        return self._listener is not None and not self._listener.is_closed()

    async def start(self) -> None:
        await self._listen()
        await super().start()
        self._watch = asyncio.create_task(self._keep_listening(), name="knora-job-listener")

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        await super().stop()
        if self._listener is not None:
            listener, self._listener = self._listener, None
            with contextlib.suppress(Exception):
                await listener.close()

    def _notified(self, *_args: object) -> None:
        self.notify()

    async def _listen(self) -> None:
        import asyncpg

        try:
            conn = await asyncpg.connect(self._dsn)
            await conn.add_listener(CHANNEL, self._notified)
        except (OSError, asyncpg.PostgresError) as exc:
            log.warning("job queue: cannot LISTEN on %s (%s); polling every %.1f s until it can", CHANNEL,
                        exc, self._poll)
            return
        self._listener = conn
        self.notify()  # what was queued while nobody listened

    async def _keep_listening(self) -> None:
        while True:
            await asyncio.sleep(self._poll)
            if not self.listening:
                self._listener = None
                await self._listen()
