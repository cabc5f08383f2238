"""A turn's telemetry: metrics and a trace from the events its runner emits anyway.

``TurnObserver`` subscribes to a turn's bus beside the stream handler. It reads the stage timings the pipeline
emits (``stage_timing``), the agent's tool calls and results, error events and the first answer text, and
records each as a metric and as a child span of the turn's root span, with the times the runner measured. The
runners do not know it exists.
"""

from __future__ import annotations

import time

from knora.domain.stream import BusEvent, Event
from knora.ports.telemetry import Attr, Telemetry
from knora.services.streaming.bus import EventBus

_NS = 1_000_000  # nanoseconds per millisecond


class TurnObserver:
    def __init__(self, telemetry: Telemetry, runtime: str, attributes: dict[str, Attr] | None = None) -> None:
        self.metrics = telemetry.metrics
        self.runtime = runtime
        self.span = telemetry.tracer.start("knora.turn", {"knora.runtime": runtime, **(attributes or {})})
        self.started = time.monotonic()
        self._answered = False
        self._tools: dict[str, tuple[int, float, str]] = {}  # call id -> (start ns, monotonic start, name)
        self.metrics.turn_started(runtime)

    def subscribe(self, bus: EventBus) -> None:
        bus.subscribe(BusEvent.FINAL_ANSWER, self._on_answer)
        bus.subscribe(BusEvent.STAGE_TIMING, self._on_stage)
        bus.subscribe(BusEvent.TOOL_CALL, self._on_tool_call)
        bus.subscribe(BusEvent.TOOL_RESULT, self._on_tool_result)
        bus.subscribe(BusEvent.ERROR, self._on_error)

    async def _on_answer(self, ev: Event) -> None:
        if self._answered or not ev.data.get("content"):
            return
        self._answered = True
        seconds = time.monotonic() - self.started
        self.metrics.first_token(self.runtime, seconds)
        self.span.set("knora.first_token_ms", round(seconds * 1000, 3))

    async def _on_stage(self, ev: Event) -> None:
        d = ev.data
        stage = str(d.get("stage") or "")
        ms = float(d.get("ms") or 0.0)
        self.metrics.stage(self.runtime, stage, ms / 1000)
        end = time.time_ns()
        attrs: dict[str, Attr] = {"knora.stage": stage}
        kept = d.get("kept")
        if isinstance(kept, int):
            attrs["knora.kept"] = kept
        self.span.record(f"stage {stage}", end - int(ms * _NS), end, attrs, error=str(d.get("error") or ""))

    async def _on_tool_call(self, ev: Event) -> None:
        call_id = str(ev.data.get("tool_call_id") or ev.id)
        name = str(ev.data.get("tool_name") or "")
        self._tools.setdefault(call_id, (time.time_ns(), time.monotonic(), name))

    async def _on_tool_result(self, ev: Event) -> None:
        d = ev.data
        call_id = str(d.get("tool_call_id") or ev.id)
        start_ns, start, name = self._tools.pop(call_id, (time.time_ns(), time.monotonic(), ""))
        name = str(d.get("tool_name") or name or "unknown")
        duration_ms = d.get("duration_ms")
        seconds = float(duration_ms) / 1000 if isinstance(duration_ms, int | float) \
            else time.monotonic() - start
        ok = bool(d.get("success", True))
        self.metrics.tool_call(self.runtime, name, "ok" if ok else "error", seconds)
        self.span.record(f"tool {name}", start_ns, start_ns + int(seconds * 1e9), {"knora.tool": name},
                         error="" if ok else str(d.get("error") or "tool failed"))

    async def _on_error(self, ev: Event) -> None:
        stage = str(ev.data.get("stage") or "")
        self.metrics.error(f"turn:{stage}" if stage else "turn")

    def end(self, outcome: str) -> None:
        """``outcome``: completed | stopped | failed | shutdown."""
        self.metrics.turn_ended(self.runtime, outcome, time.monotonic() - self.started)
        self.span.set("knora.outcome", outcome)
        if outcome == "failed":
            self.span.fail("the turn failed")
        self.span.end()
