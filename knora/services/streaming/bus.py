"""The per-request event bus (spec appendix A.1): synchronous, handlers run in registration order.

Producers (pipeline plugins, the agent engine, the title generator) call ``emit``; the stream handler
subscribes and turns events into stream-log entries. Producers never touch the HTTP connection.

Text deltas (``final_answer`` / ``thought`` events that carry content and are not the ``done`` mark) are paced
when the bus has a :class:`DeltaPacer` (``pacing.py``): a delta that comes sooner than the process's hold
after this bus's last text event is held, and the held deltas of one event id go to the handlers as one event
(the first delta's fields, the contents joined). Held text is released by the first delta after the hold,
before any other event (so handlers see events in the order they were emitted), by a timer when the producer
pauses, and by ``flush``/``close`` at the end of the turn. Without a pacer every event is dispatched at once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from knora.domain.stream import BusEvent, Event, bus_event
from knora.services.streaming.pacing import DeltaPacer

Handler = Callable[[Event], Awaitable[None]]

PACED = frozenset({BusEvent.FINAL_ANSWER, BusEvent.THOUGHT})
_HELD, _RELEASE, _NOW, _SWITCH = object(), object(), object(), object()  # what _hold decided for a delta
# the release timer fires half a hold late: a producer still streaming releases held text first
TIMER_SLACK = 1.5


class EventBus:
    def __init__(self, pacer: DeltaPacer | None = None) -> None:
        self._handlers: dict[BusEvent | None, list[Handler]] = {}
        # per type: its handlers, then the catch-all ones
        self._route: dict[BusEvent, tuple[Handler, ...]] = {}
        # event ids: this bus's prefix and a counter (unique, no uuid per token)
        self._prefix = str(uuid.uuid4())
        self._count = 0
        self._pacer = pacer if pacer is not None and pacer.frame_budget else None
        self._entered = False  # counted by the pacer as a stream writing text
        self._held: list[str] = []  # contents of held deltas, oldest first
        self._held_key: tuple[BusEvent, str, Any] = (BusEvent.FINAL_ANSWER, "", None)
        self._held_data: dict[str, Any] = {}
        self._last_text = float("-inf")  # loop time of this bus's last dispatched text event
        self._timer: asyncio.TimerHandle | None = None
        self._releasing: asyncio.Task[None] | None = None  # a timer's release in flight

    def subscribe(self, event_type: BusEvent | None, handler: Handler) -> None:
        """``None`` subscribes to every event type."""
        self._handlers.setdefault(event_type, []).append(handler)
        self._route.clear()

    def _handlers_for(self, event_type: BusEvent) -> tuple[Handler, ...]:
        route = self._route[event_type] = (*self._handlers.get(event_type, ()), *self._handlers.get(None, ()))
        return route

    async def emit(self, event_type: BusEvent, data: dict[str, Any] | None = None, *,
                   event_id: str = "") -> None:
        if type(event_type) is not BusEvent:
            event_type = BusEvent(event_type)
        if self._pacer is not None:
            if self._releasing is not None:
                await asyncio.shield(self._releasing)  # a timer's release goes out before anything after it
            if event_type in PACED and data and data.get("content") and not data.get("done"):
                action = self._hold(event_type, data, event_id)
                if action is _SWITCH:  # another event id's text is held: it goes first
                    await self._release()
                    action = self._hold(event_type, data, event_id)
                if action is _HELD:
                    return
                if action is _RELEASE:  # held text and this delta, as one event
                    await self._release()
                    return
            elif self._held:
                await self._release()
        await self._dispatch(event_type, data, event_id)

    async def _dispatch(self, event_type: BusEvent, data: dict[str, Any] | None, event_id: str) -> None:
        if not event_id:
            self._count += 1
            event_id = f"{self._prefix}-{self._count}"
        event = bus_event(event_type, {} if data is None else dict(data), event_id)
        route = self._route.get(event_type)
        for handler in self._handlers_for(event_type) if route is None else route:
            await handler(event)

    # --- pacing ---------------------------------------------------------------------------------------------
    def _hold(self, event_type: BusEvent, data: dict[str, Any], event_id: str) -> object:
        """What to do with a text delta: hold it, release it with the held ones, dispatch it now, or
        switch."""
        assert self._pacer is not None
        if not self._entered:
            self._entered = True
            self._pacer.enter()
        loop = asyncio.get_running_loop()
        now = loop.time()
        key = (event_type, event_id, data.get("event_id"))
        if self._held:
            if key != self._held_key:
                return _SWITCH
            self._held.append(data["content"])
            return _HELD if now < self._last_text + self._pacer.hold else _RELEASE
        if now >= self._last_text + self._pacer.hold:
            self._last_text = now
            return _NOW
        self._held, self._held_key, self._held_data = [data["content"]], key, data
        if self._timer is None:
            self._timer = loop.call_at(self._last_text + self._pacer.hold * TIMER_SLACK, self._due)
        return _HELD

    async def _release(self) -> None:
        held, self._held = self._held, []
        if not held:
            return
        self._last_text = asyncio.get_running_loop().time()
        event_type, event_id, _ = self._held_key
        data = dict(self._held_data)
        data["content"] = "".join(held)
        await self._dispatch(event_type, data, event_id)

    def _due(self) -> None:
        """The hold passed and no delta came (the producer paused): release what is held, in a task."""
        self._timer = None
        if not self._held or self._pacer is None:
            return
        loop = asyncio.get_running_loop()
        # text went out meanwhile; what is held now is newer
        if loop.time() < self._last_text + self._pacer.hold:
            self._timer = loop.call_at(self._last_text + self._pacer.hold * TIMER_SLACK, self._due)
            return
        if self._releasing is None:
            self._releasing = loop.create_task(self._timed_release())

    async def _timed_release(self) -> None:
        try:
            await self._release()
        finally:
            self._releasing = None

    async def flush(self) -> None:
        """Dispatch held text now (end of turn, stop, shutdown)."""
        if self._releasing is not None:
            await asyncio.shield(self._releasing)
        await self._release()

    async def close(self) -> None:
        """Flush, and stop counting as a stream writing text. Later text is dispatched unpaced."""
        try:
            await self.flush()
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._entered:
                self._entered = False
                self._pacer.leave()  # type: ignore[union-attr]
            self._pacer = None
