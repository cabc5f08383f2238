"""A large document's progress, written to its row while its job runs, so every replica's document list shows
it (``metadata.progress``: stage, done of total, time left).

Only documents embedded in more than one slice report (a small one is done before a list could show it), at
most one write every ``interval`` seconds and never more than one at a time: the job never waits for a
progress write between slices, and a slow database costs at most a stale figure. A job that fails removes its
figure (it would read as still running); a completed job's metadata is written without it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from types import TracebackType

from knora.domain.common import utcnow
from knora.domain.knowledge import IngestProgress, ProgressStage
from knora.ports.store import KnowledgeRepo

log = logging.getLogger(__name__)


class ProgressReporter:
    """``async with`` around a job's embedding and commit; its methods do nothing when not ``enabled``."""

    def __init__(self, repo: KnowledgeRepo, knowledge_id: str, total: int, *, enabled: bool = True,
                 interval: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._repo, self._id, self._total, self._enabled = repo, knowledge_id, total, enabled
        self._interval, self._clock = interval, clock
        self._started_at = utcnow()
        self._t0 = clock()
        self._last_write = float("-inf")
        self._writing: asyncio.Task[None] | None = None

    def progress(self, stage: ProgressStage, done: int) -> IngestProgress:
        """The figure at ``done`` of ``total``: time left at the rate measured since the job began."""
        elapsed = self._clock() - self._t0
        eta = (self._total - done) * elapsed / done if 0 < done < self._total and elapsed > 0 else None
        return IngestProgress(stage=stage, done=done, total=self._total, started_at=self._started_at,
                              eta_seconds=None if eta is None else round(eta, 1))

    async def __aenter__(self) -> ProgressReporter:
        if self._enabled:
            self._t0 = self._clock()
            self._last_write = self._t0
            await self._write(self.progress(ProgressStage.EMBEDDING, 0))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if not self._enabled:
            return
        if exc_type is None or not issubclass(exc_type, Exception):
            # done (the completion replaced the metadata) or cancelled (a delete, re-parse or cancel-parse:
            # the row is gone or no longer processing): nothing to write, only an unfinished write to stop
            if self._writing is not None and not self._writing.done():
                self._writing.cancel()
            return
        await self._settle()
        await self._write(None)

    def embedded(self, done: int) -> None:
        """Called after each slice: starts a write when the last one is ``interval`` old and has finished."""
        if not self._enabled:
            return
        now = self._clock()
        busy = self._writing is not None and not self._writing.done()
        if busy or now - self._last_write < self._interval:
            return
        self._last_write = now
        self._writing = asyncio.create_task(self._write(self.progress(ProgressStage.EMBEDDING, done)))

    async def indexing(self) -> None:
        """Embedding is over; the rows are being built and committed."""
        if self._enabled:
            await self._settle()
            await self._write(self.progress(ProgressStage.INDEXING, self._total))

    async def _settle(self) -> None:
        if self._writing is not None and not self._writing.done():
            await asyncio.wait([self._writing])

    async def _write(self, progress: IngestProgress | None) -> None:
        try:
            await self._repo.set_progress(self._id, progress)
        except Exception:  # a figure not shown is not worth failing the job for
            log.warning("could not record the progress of %s", self._id, exc_info=True)
