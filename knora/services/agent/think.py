"""One model call of a ReAct round, streamed onto the bus (spec §6.4 ``streamThinkingToEventBus``).

Reasoning deltas (provider channel or inline ``<think>…</think>``) become THOUGHT events, plain text becomes
FINAL_ANSWER deltas live — if the round turns out to call tools, the stream handler supersedes that text as a
preamble and the engine files it under the step's ``thought``. Transient model errors are retried here.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from knora.domain.model_wait import shared_first_token_window
from knora.domain.stream import BusEvent
from knora.domain.think import ThinkSplitter, strip_think
from knora.ports.chat import (
    ChatChunk,
    ChatMessage,
    ChatModel,
    ChatOptions,
    ModelDeadline,
    ModelError,
    ToolCall,
    Usage,
    close_stream,
)
from knora.ports.turn import EventBus

log = logging.getLogger(__name__)

TRANSIENT_MARKERS = ("429", "rate limit", "500", "502", "503", "504", "overloaded", "timeout", "timed out",
                     "connection", "server error", "temporarily unavailable")


def event_id(suffix: str) -> str:
    return f"{uuid.uuid4().hex[:8]}-{suffix}"


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ModelDeadline):
        return False  # the model used its whole waiting budget: a retry would only multiply the wait
    if isinstance(exc, ModelError) and exc.transient:
        return True
    if isinstance(exc, TimeoutError):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in TRANSIENT_MARKERS)


@dataclass
class RoundResult:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: Usage | None = None
    answer_streamed: bool = False
    answer_event_id: str = ""


@dataclass
class Streamer:
    bus: EventBus
    iteration: int
    live_answer: bool = True  # False in the text ReAct protocol: the raw text is parsed first
    _thought_id: str = field(default_factory=lambda: event_id("thinking"))
    _thought_open: bool = False
    result: RoundResult = field(default_factory=lambda: RoundResult(answer_event_id=event_id("answer")))

    async def thought(self, text: str) -> None:
        if not text:
            return
        self._thought_open = True
        await self.bus.emit(BusEvent.THOUGHT, {"content": text, "done": False, "event_id": self._thought_id,
                                               "iteration": self.iteration}, event_id=self._thought_id)

    async def close_thought(self) -> None:
        if self._thought_open:
            self._thought_open = False
            await self.bus.emit(BusEvent.THOUGHT, {"content": "", "done": True, "event_id": self._thought_id,
                                                   "iteration": self.iteration}, event_id=self._thought_id)

    async def answer(self, text: str) -> None:
        if not self.live_answer or not text:
            return
        if not self.result.answer_streamed and not text.strip():
            return  # whitespace before any real answer text is not an answer
        await self.close_thought()
        self.result.answer_streamed = True
        eid = self.result.answer_event_id
        await self.bus.emit(BusEvent.FINAL_ANSWER, {"content": text, "done": False, "event_id": eid,
                                                    "is_fallback": False}, event_id=eid)


async def stream_round(model: ChatModel, messages: Sequence[ChatMessage], options: ChatOptions, bus: EventBus,
                       iteration: int, *, live_answer: bool = True, cancelled: asyncio.Event | None = None,
                       timeout: float = 120.0) -> RoundResult:
    s = Streamer(bus, iteration, live_answer)
    splitter = ThinkSplitter()
    content: list[str] = []
    reasoning: list[str] = []
    stream = model.stream(messages, options)
    try:
        async with asyncio.timeout(timeout):
            async for chunk in stream:
                await _route(s, splitter, chunk, content, reasoning)
                if cancelled is not None and cancelled.is_set():
                    break
    finally:
        await close_stream(stream)
    for kind, text in splitter.flush_segments():
        await (s.thought(text) if kind == "think" else s.answer(text))
    await s.close_thought()
    s.result.content = strip_think("".join(content))
    s.result.reasoning = "".join(reasoning)
    s.result.finish_reason = (s.result.finish_reason or "stop").strip().lower() or "stop"
    return s.result


async def _route(s: Streamer, splitter: ThinkSplitter, chunk: ChatChunk, content: list[str],
                 reasoning: list[str]) -> None:
    """One delta: reasoning → THOUGHT, text → split into thought/answer, the last chunk's metadata kept."""
    if chunk.reasoning_content:
        reasoning.append(chunk.reasoning_content)
        await s.thought(chunk.reasoning_content)
    if chunk.content:
        content.append(chunk.content)
        for kind, text in splitter.segments(chunk.content):
            await (s.thought(text) if kind == "think" else s.answer(text))
    if chunk.tool_calls:
        s.result.tool_calls = list(chunk.tool_calls)
    if chunk.finish_reason:
        s.result.finish_reason = chunk.finish_reason
    if chunk.usage is not None:
        s.result.usage = chunk.usage


async def stream_with_retry(model: ChatModel, messages: Sequence[ChatMessage], options: ChatOptions,
                            bus: EventBus, iteration: int, *, live_answer: bool = True,
                            cancelled: asyncio.Event | None = None, timeout: float = 120.0,
                            retry_delays: Sequence[float] = (1.0, 2.0)) -> RoundResult:
    """Up to ``len(retry_delays)`` retries of transient failures; anything else propagates at once. The
    attempts share one first-token deadline (``model_first_token_seconds``), so retrying a model that sends
    nothing cannot multiply the user's wait."""
    attempt = 0
    with shared_first_token_window():
        while True:
            try:
                return await stream_round(model, messages, options, bus, iteration, live_answer=live_answer,
                                          cancelled=cancelled, timeout=timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt >= len(retry_delays) or not is_transient(exc):
                    raise
                log.info("transient model error (attempt %d): %s", attempt + 1, exc)
                await asyncio.sleep(retry_delays[attempt])
                attempt += 1


async def stream_answer(model: ChatModel, messages: Sequence[ChatMessage], options: ChatOptions,
                        bus: EventBus, *, timeout: float = 120.0, is_fallback: bool = False) -> str:
    """Synthesis (spec §6.4.3): content only, one answer id, a done marker at the end."""
    eid = event_id("answer")
    parts: list[str] = []
    splitter = ThinkSplitter()

    async def emit(text: str) -> None:
        if text:
            await bus.emit(BusEvent.FINAL_ANSWER, {"content": text, "done": False, "event_id": eid,
                                                   "is_fallback": is_fallback}, event_id=eid)

    stream = model.stream(messages, options)
    try:
        async with asyncio.timeout(timeout):
            async for chunk in stream:
                for kind, text in splitter.segments(chunk.content):
                    if kind == "text":
                        parts.append(text)
                        await emit(text)
    finally:
        await close_stream(stream)
    for kind, text in splitter.flush_segments():
        if kind == "text":
            parts.append(text)
            await emit(text)
    await bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": eid,
                                           "is_fallback": is_fallback}, event_id=eid)
    return "".join(parts).strip()
