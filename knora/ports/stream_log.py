"""Append-only stream log per (session, assistant message), and cross-process stop signals (spec §5.2,
§5.8)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from knora.domain.stream import StreamEvent


@runtime_checkable
class StreamLog(Protocol):
    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int:
        """Store the event, assign and return its seq (0-based), wake every follower. Refreshes the TTL."""
        ...

    async def read(self, session_id: str, message_id: str, after: int = -1) -> list[StreamEvent]:
        """Events with seq > after."""
        ...

    def follow(self, session_id: str, message_id: str, after: int = -1,
               heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        """Stored events with seq > after, then live ones as they are appended (push, never a poll interval).
        Ends after a terminal event (complete or stop) has been yielded; error frames do not end a turn (spec
        §5.6.1) — the streaming service closes every turn with complete or stop. Waits for a stream that has
        not started yet; ends if the stream expires while followed. With ``heartbeat``, yields ``None`` after
        every ``heartbeat`` seconds without an event (SSE keep-alives), without a timer per event."""
        ...

    async def exists(self, session_id: str, message_id: str) -> bool: ...

    async def close(self) -> None: ...


@runtime_checkable
class StopSignals(Protocol):
    """Stop requests that reach whichever process runs the turn."""

    async def request_stop(self, message_id: str) -> None: ...

    async def is_stopped(self, message_id: str) -> bool: ...

    async def wait_for_stop(self, message_id: str) -> None:
        """Returns when a stop was requested for message_id (used by the stop watcher)."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class Pingable(Protocol):
    """A backing service that can say it is reachable (``ping`` raises when it is not): the readiness check
    (``GET /health/ready``) asks every part of the running services that is one."""

    async def ping(self) -> None: ...
