from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

JobHandler = Callable[[dict[str, Any]], Awaitable[None]]


@runtime_checkable
class JobQueue(Protocol):
    """Durable background jobs. Pending jobs survive a restart and run again."""

    def register(self, kind: str, handler: JobHandler) -> None: ...

    async def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None) -> str:
        """``key`` de-duplicates: a queued/running job with the same key is not enqueued twice."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def wait_idle(self, timeout: float | None = None) -> None:
        """For tests and the CLI: returns when nothing is queued or running."""
        ...
