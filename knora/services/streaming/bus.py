"""The per-request event bus (spec appendix A.1): synchronous, handlers run in registration order.

Producers (pipeline plugins, the agent engine, the title generator) call ``emit``; the stream handler subscribes
and turns events into stream-log entries. Producers never touch the HTTP connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from knora.domain.stream import BusEvent, Event, bus_event

Handler = Callable[[Event], Awaitable[None]]


class EventBus:
    def __init__(self) -> None:
        self._handlers: dict[BusEvent | None, list[Handler]] = {}
        self._route: dict[BusEvent, tuple[Handler, ...]] = {}  # per type: its handlers, then the catch-all ones
        self._prefix = str(uuid.uuid4())  # event ids: this bus's prefix and a counter (unique, no uuid per token)
        self._count = 0

    def subscribe(self, event_type: BusEvent | None, handler: Handler) -> None:
        """``None`` subscribes to every event type."""
        self._handlers.setdefault(event_type, []).append(handler)
        self._route.clear()

    def _handlers_for(self, event_type: BusEvent) -> tuple[Handler, ...]:
        route = self._route[event_type] = (*self._handlers.get(event_type, ()), *self._handlers.get(None, ()))
        return route

    async def emit(self, event_type: BusEvent, data: dict[str, Any] | None = None, *, event_id: str = "") -> Event:
        if not event_id:
            self._count += 1
            event_id = f"{self._prefix}-{self._count}"
        if type(event_type) is not BusEvent:
            event_type = BusEvent(event_type)
        event = bus_event(event_type, {} if data is None else dict(data), event_id)
        route = self._route.get(event_type)
        for handler in self._handlers_for(event_type) if route is None else route:
            await handler(event)
        return event
