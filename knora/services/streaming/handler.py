"""Bus events → stream-log entries for one turn (spec §5.3 mapping, §5.4 state).

The handler is the only writer of a turn's deltas: it expands citations in answer and reasoning text through
one streaming decoder per (channel, event id), accumulates references and re-sends the whole list each time,
marks pre-tool "preamble" answer segments superseded, times thinking/answer/tool spans, and records the
quick-answer timeline so the saved message carries ``agent_steps`` even when the runner returns none.
Appends are serialised by a lock, so concurrent producers (parallel tools, the title task) never reorder the
deltas of one event id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from knora.domain.common import rfc3339
from knora.domain.stream import BusEvent, Event, StreamEvent, stream_event
from knora.services.citations.registry import ReferenceRegistry
from knora.services.citations.stream import CitationStreamDecoder
from knora.services.streaming.bus import EventBus


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


@dataclass
class _Segment:
    """One answer event id's text, kept as parts (a long answer is thousands of deltas; ``+=`` would copy it
    each time)."""

    parts: list[str] = field(default_factory=list)
    superseded: bool = False

    @property
    def content(self) -> str:
        return "".join(self.parts)


_FIXED_TEXT = {
    BusEvent.TOOL_APPROVAL_REQUIRED: "MCP tool requires human approval",
    BusEvent.TOOL_APPROVAL_RESOLVED: "MCP tool approval resolved",
}


class EntrySink(Protocol):
    """Where the handler writes a turn's entries: the turn's ``StreamLog``, or the one reader of an unsaved
    turn (``unsaved.py``)."""

    async def append(self, session_id: str, message_id: str, event: StreamEvent) -> int: ...


class StreamHandler:
    def __init__(self, log: EntrySink, session_id: str, message_id: str, registry: ReferenceRegistry) -> None:
        self.log = log
        self.session_id = session_id
        self.message_id = message_id
        self.registry = registry
        self.started = time.monotonic()
        self.references: list[dict[str, Any]] = []
        self._ref_ids: set[str] = set()
        self.segments: dict[str, _Segment] = {}
        self._reasoning: list[str] = []
        self.is_fallback = False
        self.tool_calls: list[dict[str, Any]] = []
        self.stage_timings: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.last_seq = -1
        self.log_error: BaseException | None = None  # the first failed append: the stream was cut there
        self._decoders: dict[tuple[str, str], CitationStreamDecoder] = {}
        self._span_start: dict[str, float] = {}
        self._lock = asyncio.Lock()

    def subscribe(self, bus: EventBus) -> None:
        bus.subscribe(None, self.on_event)

    @property
    def final_answer(self) -> str:
        """What the user saw as the answer: non-superseded segments in arrival order, citations expanded."""
        return "".join(s.content for s in self.segments.values() if not s.superseded)

    @property
    def answer_streamed(self) -> bool:
        return any(s.parts for s in self.segments.values())

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    async def append(self, type_: str, content: str = "", done: bool = False,
                     data: Mapping[str, Any] | None = None, event_id: str = "") -> int:
        # Built from values this handler produced itself, so validation is skipped on the hot path.
        event = stream_event(type_, content, done, dict(data) if data else {}, event_id)
        try:
            self.last_seq = await self.log.append(self.session_id, self.message_id, event)
        except Exception as exc:
            # Remembered so the turn's end knows its followers missed text (an outage of the log), not
            # just that the runner failed: the saved answer is then flagged truncated (issue 20, item 7).
            if self.log_error is None:
                self.log_error = exc
            raise
        return self.last_seq

    # --- dispatch -------------------------------------------------------------------------------------------
    async def on_event(self, ev: Event) -> None:
        handler = _DISPATCH.get(ev.type)
        if handler is not None:
            async with self._lock:
                await handler(self, ev)

    async def _delta(self, channel: str, ev: Event) -> None:
        d = ev.data
        event_id = str(d.get("event_id") or ev.id)
        key = (channel, event_id)
        decoder = self._decoders.get(key)
        if decoder is None:
            decoder = self._decoders[key] = self.registry.stream_decoder()
            self._span_start[f"{channel}:{event_id}"] = time.monotonic()
        done = bool(d.get("done"))
        text = decoder.feed(str(d.get("content") or ""))
        data: dict[str, Any] = {"event_id": event_id}
        if done:
            text += decoder.flush()
            self._decoders.pop(key, None)
            start = self._span_start.pop(f"{channel}:{event_id}", time.monotonic())
            data.update(duration_ms=int((time.monotonic() - start) * 1000), completed_at=int(time.time()))
        if channel == "answer":
            if d.get("is_fallback"):
                self.is_fallback = True
                data["is_fallback"] = True
            if text:
                self.segments.setdefault(event_id, _Segment()).parts.append(text)
        elif channel == "thinking" and text:
            self._reasoning.append(text)
        if text or done:
            await self.append(channel, text, done, data, event_id)

    async def _on_answer(self, ev: Event) -> None:
        await self._delta("answer", ev)

    async def _on_thought(self, ev: Event) -> None:
        await self._delta("thinking", ev)

    async def _on_reflection(self, ev: Event) -> None:
        await self.append("reflection", str(ev.data.get("content") or ""), bool(ev.data.get("done")),
                          None, ev.id)

    async def _on_tool_call(self, ev: Event) -> None:
        d = ev.data
        for segment in self.segments.values():  # text before a tool call was a preamble, not the answer
            if segment.parts:
                segment.superseded = True
        call_id = str(d.get("tool_call_id") or ev.id)
        name = str(d.get("tool_name") or "")
        self._span_start.setdefault(f"tool:{call_id}", time.monotonic())
        if not any(c["id"] == call_id for c in self.tool_calls):
            self.tool_calls.append({"id": call_id, "name": name, "args": _plain(d.get("arguments") or {}),
                                    "result": None})
        data = {"tool_name": name, "arguments": _plain(d.get("arguments") or {}), "tool_call_id": call_id}
        data.update({k: _plain(v) for k, v in d.items() if k not in data and k != "content"})
        await self.append("tool_call", f"Calling tool: {name}", False, data, ev.id)

    async def _on_tool_result(self, ev: Event) -> None:
        d = ev.data
        call_id = str(d.get("tool_call_id") or ev.id)
        success = bool(d.get("success", True))
        start = self._span_start.pop(f"tool:{call_id}", None)
        duration = d.get("duration_ms")
        if duration is None:
            duration = int((time.monotonic() - start) * 1000) if start is not None else 0
        error = str(d.get("error") or "")
        data: dict[str, Any] = {"tool_name": d.get("tool_name", ""), "success": success, "error": error,
                                "duration_ms": duration, "tool_call_id": call_id}
        data.update({k: _plain(v) for k, v in d.items() if k not in data and k not in ("content", "data")})
        extra = d.get("data")
        if isinstance(extra, dict):  # the tool's own fields sit flat beside the standard ones (api §2.3)
            data.update({k: _plain(v) for k, v in extra.items() if k not in data})
        content = str(d.get("content") or ("" if success else error))
        for call in self.tool_calls:
            if call["id"] == call_id:
                call["result"] = {"success": success, "output": data.get("output", ""), "error": error}
                call["duration"] = duration
        await self.append("tool_result" if success else "error", content, False, data, ev.id)

    async def _on_references(self, ev: Event) -> None:
        for ref in ev.data.get("references") or []:
            item = _plain(ref)
            rid = str(item.get("id", "")) if isinstance(item, dict) else ""
            if isinstance(item, dict) and rid not in self._ref_ids:
                self._ref_ids.add(rid)
                self.references.append(item)
        await self.append("references", "", False, {"references": list(self.references)}, ev.id)

    async def _on_error(self, ev: Event) -> None:
        err = str(ev.data.get("error") or "error")
        stage = str(ev.data.get("stage") or "")
        self.errors.append({"stage": stage, "error": err})
        await self.append("error", err, True, {"stage": stage, "error": err}, ev.id)

    async def _on_stage_timing(self, ev: Event) -> None:
        item = {k: _plain(v) for k, v in ev.data.items()}
        self.stage_timings.append(item)
        await self.append("debug", "", False, item, ev.id)

    async def _on_title(self, ev: Event) -> None:
        title = str(ev.data.get("title") or "")
        await self.append("session_title", title, True, {"session_id": self.session_id, "title": title},
                          ev.id)

    async def _on_fixed(self, ev: Event) -> None:
        data = {k: _plain(v) for k, v in ev.data.items()}
        await self.append(str(ev.type), _FIXED_TEXT[ev.type], True, data, ev.id)

    # --- ending ---------------------------------------------------------------------------------------------
    async def flush_all(self) -> None:
        """Release text still held by the decoders (end of turn, stop, shutdown): a partial tag is dropped."""
        async with self._lock:
            for (channel, event_id), decoder in list(self._decoders.items()):
                tail = decoder.flush()
                if tail:
                    if channel == "answer":
                        self.segments.setdefault(event_id, _Segment()).parts.append(tail)
                    else:
                        self._reasoning.append(tail)
                    await self.append(channel, tail, False, {"event_id": event_id}, event_id)
            self._decoders.clear()

    async def fallback_answer(self, text: str) -> None:
        """A final answer the runner returned without streaming it: sent once, as WeKnora's fallback pair."""
        event_id = f"answer-fallback-{int(time.time() * 1000)}"
        async with self._lock:
            self.segments[event_id] = _Segment([text])
            await self.append("answer", text, False, {"event_id": event_id, "is_fallback": True}, event_id)
            await self.append("answer", "", True, {"event_id": event_id, "is_fallback": True}, event_id)

    def timeline_steps(self) -> list[dict[str, Any]]:
        """Quick-answer timeline as ``agent_steps[0]`` (spec §7.1) when the runner produced no steps."""
        if not self.tool_calls and not self._reasoning:
            return []
        return [{"iteration": 0, "thought": "", "reasoning_content": self.reasoning,
                 "tool_calls": self.tool_calls, "timestamp": rfc3339(datetime.now(UTC))}]


_DISPATCH = {
    BusEvent.FINAL_ANSWER: StreamHandler._on_answer,
    BusEvent.THOUGHT: StreamHandler._on_thought,
    BusEvent.REFLECTION: StreamHandler._on_reflection,
    BusEvent.TOOL_CALL: StreamHandler._on_tool_call,
    BusEvent.TOOL_RESULT: StreamHandler._on_tool_result,
    BusEvent.REFERENCES: StreamHandler._on_references,
    BusEvent.ERROR: StreamHandler._on_error,
    BusEvent.STAGE_TIMING: StreamHandler._on_stage_timing,
    BusEvent.SESSION_TITLE: StreamHandler._on_title,
    BusEvent.TOOL_APPROVAL_REQUIRED: StreamHandler._on_fixed,
    BusEvent.TOOL_APPROVAL_RESOLVED: StreamHandler._on_fixed,
}
