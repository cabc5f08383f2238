"""Unsaved turns: one chat turn over the caller's own history, with nothing stored (the stateless path of the
OpenAI-compatible API, docs/openai-api.md).

The turn runs the same runner, bus, pacer, reference registry and ``StreamHandler`` as a stored turn, so its
entries are exactly what a stored turn's log would hold (citations expanded to public tags, partial tags held
back, references accumulated); they go to the turn's one reader instead of a stream log. No session, message
or log entry is written, and no other process can resume or stop it: the reader owns the turn, and when it
stops reading (an HTTP client that left) the runner is cancelled, which closes the model request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from knora.domain.stream import StreamEvent, stream_event
from knora.pacing import FOREGROUND
from knora.ports.telemetry import NO_TELEMETRY, Telemetry
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest, TurnRunner
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.services.streaming.ending import CompletedTurn, completed_fields, drain
from knora.services.streaming.handler import StreamHandler
from knora.services.streaming.observe import TurnObserver
from knora.services.streaming.pacing import DeltaPacer

log = logging.getLogger(__name__)


class _Reader:
    """The handler's sink: entries go to a queue the turn's reader drains; ``None`` ends it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        self.count = 0

    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int:
        self.queue.put_nowait(event)
        self.count += 1
        return self.count - 1


class UnsavedTurn:
    """A started unsaved turn. Read ``events()`` once; after its last entry (``complete``), ``result`` holds
    what a stored turn would have saved (content, references, model id …) and ``context`` the turn's
    context (timings, usage)."""

    def __init__(self, runner: TurnRunner, req: TurnRequest, kind: str, pacer: DeltaPacer,
                 tasks: set[asyncio.Task[None]], telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.request = req
        self._runner, self._kind = runner, kind
        self._reader = _Reader()
        self.registry = ReferenceRegistry(req.citations_enabled)
        self.context = TurnContext(bus=EventBus(pacer), references=self.registry)
        self._handler = StreamHandler(self._reader, req.session_id, req.assistant_message_id, self.registry)
        bus = self.context.bus
        assert isinstance(bus, EventBus)
        self._handler.subscribe(bus)
        # metrics and a trace as for a stored turn (the session and message ids name nothing stored)
        self._observer = TurnObserver(telemetry, kind, {"knora.tenant_id": req.tenant_id,
                                                        "knora.unsaved": True})
        self._observer.subscribe(bus)
        self.result: CompletedTurn | None = None
        release = FOREGROUND.hold()  # ingestion's bulk loops step aside while it runs
        self._task = asyncio.create_task(self._run(), name=f"unsaved-turn-{req.assistant_message_id}")
        tasks.add(self._task)
        self._task.add_done_callback(tasks.discard)
        self._task.add_done_callback(lambda _task: release())

    async def events(self, heartbeat: float | None = None) -> AsyncIterator[StreamEvent | None]:
        """The turn's entries as they come, ending with ``complete``; with ``heartbeat``, ``None`` after every
        ``heartbeat`` seconds without one (SSE keep-alives while a model thinks). Leaving early cancels the
        turn."""
        queue = self._reader.queue
        try:
            while True:
                try:  # a cancelled ``get`` takes nothing from the queue
                    event = await asyncio.wait_for(queue.get(), heartbeat) if heartbeat else await queue.get()
                except TimeoutError:
                    yield None
                    continue
                if event is None:
                    return
                yield event
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stops the runner (its model request is closed); a finished turn is left as it is."""
        if not self._task.done():
            self.context.cancelled.set()
            self._task.cancel()

    @property
    def running(self) -> bool:
        return not self._task.done()

    async def _run(self) -> None:
        req, ctx, handler = self.request, self.context, self._handler
        started = time.monotonic()
        outcome: TurnOutcome | None = None
        failure: BaseException | None = None
        try:
            outcome = await self._runner.run(req, ctx)
        except asyncio.CancelledError:
            self._observer.end("stopped")
            bus = ctx.bus
            assert isinstance(bus, EventBus)
            await bus.close()  # the pacer stops counting this stream; nobody reads what it held
            raise
        except Exception as exc:
            failure = exc
            log.exception("unsaved turn %s failed", req.assistant_message_id)
        self._observer.end("failed" if failure is not None else "completed")
        await drain(self._kind, ctx, handler, self.registry, outcome, failure, req.assistant_message_id)
        self.result = done = completed_fields(req, ctx, handler, self.registry, outcome, "", started)
        self._reader.queue.put_nowait(stream_event(
            "complete", "", True, {"total_steps": len(done.steps), "total_duration_ms": done.duration_ms},
            f"complete-{time.time_ns()}"))
        self._reader.queue.put_nowait(None)


class UnsavedTurns:
    """Starts unsaved turns and keeps their tasks until they end (``close`` cancels the ones still
    running)."""

    def __init__(self, pacer: DeltaPacer, telemetry: Telemetry = NO_TELEMETRY) -> None:
        self.pacer = pacer
        self.telemetry = telemetry
        self.tasks: set[asyncio.Task[None]] = set()

    def start(self, runner: TurnRunner, req: TurnRequest, kind: str) -> UnsavedTurn:
        return UnsavedTurn(runner, req, kind, self.pacer, self.tasks, self.telemetry)

    @property
    def running(self) -> int:
        return sum(1 for t in self.tasks if not t.done())

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
