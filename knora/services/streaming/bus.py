"""The per-request event bus (spec appendix A.1): synchronous, handlers run in registration order.

Producers (pipeline plugins, the agent engine, the title generator) call ``emit``; the stream handler subscribes
and turns events into stream-log entries. Producers never touch the HTTP connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from knora.domain.stream import BusEvent, Event

Handler = Callable[[Event], Awaitable[None]]


class EventBus:
    def __init__(self) -> None:
        self._handlers: dict[BusEvent | None, list[Handler]] = {}

    def subscribe(self, event_type: BusEvent | None, handler: Handler) -> None:
        """``None`` subscribes to every event type."""
        self._handlers.setdefault(event_type, []).append(handler)

    async def emit(self, event_type: BusEvent, data: dict[str, Any] | None = None, *, event_id: str = "") -> Event:
        event = Event(type=event_type, id=event_id or str(uuid.uuid4()), data=data or {})
        for handler in [*self._handlers.get(event_type, []), *self._handlers.get(None, [])]:
            await handler(event)
        return event
