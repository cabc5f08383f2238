from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

JobHandler = Callable[[dict[str, Any]], Awaitable[None]]
# Called instead of the handler for a job started more than the queue's maximum number of times without
# finishing (its process died each time): records why the work will not happen (payload, reason).
GiveUpHandler = Callable[[dict[str, Any], str], Awaitable[None]]


@dataclass(frozen=True)
class JobRequest:
    """A job to be written by a repository in the same transaction as the record it is about (a document
    and its ingestion job): neither exists without the other, whatever fails between them."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    key: str | None = None


@runtime_checkable
class JobQueue(Protocol):
    """Durable background jobs. Pending jobs survive a restart and run again."""

    def register(self, kind: str, handler: JobHandler, *, give_up: GiveUpHandler | None = None) -> None:
        """``give_up`` runs (once) for a job that was started too often without finishing; the job is then
        failed."""
        ...

    async def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None) -> str:
        """``key`` de-duplicates: a queued/running job with the same key is not enqueued twice."""
        ...

    def notify(self) -> None:
        """A job was written straight to the queue's table (``JobRequest``, committed with its record): look
        for it now rather than at the next poll."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def wait_idle(self, timeout: float | None = None) -> None:
        """For tests and the CLI: returns when nothing is queued or running."""
        ...
