"""Bounded waiting for a model: a first-token deadline and a stall deadline around any ``ChatModel``.

Why a wrapper and not per-adapter timeouts: the clients' own timeouts are per HTTP attempt and multiply with
their retries (the OpenAI SDK's 120 s × 3 attempts kept a user on keep-alives for 362 s; ``Retry-After: 30``
twice kept them 62 s), and a model that sends a byte every minute never trips a read timeout on the whole
call. The registry wraps every network model once, so the quick-answer pipeline and the agent, on every
provider, get the same bounds:

* **first token** — from the call until the first streamed delta (answer or reasoning text). It covers the
  client's own retries, and retries a caller makes inside ``model_wait.shared_first_token_window`` share one
  deadline measured from the last delta any attempt produced, so retrying never multiplies it. A
  non-streaming ``chat`` has its whole answer as its first token, so the same bound applies to the whole call.
* **stall** — the longest gap between two deltas once the answer has begun.

Either ends the call with a :class:`ModelDeadline` (a non-transient ``ModelError``: retrying a model that
just hung for the whole budget would only double the wait); the runtimes turn it into an error frame and
``complete``. Ending the wait closes the model's HTTP stream at once (the inner generator is cancelled and
closed), so the provider stops generating. ``0`` turns a bound off.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from knora.domain.model_wait import note_progress, wait_started
from knora.ports.chat import (
    ChatChunk,
    ChatMessage,
    ChatModel,
    ChatModelWrapper,
    ChatOptions,
    ChatResponse,
    ModelDeadline,
    close_stream,
)


@dataclass(frozen=True)
class Deadlines:
    """Seconds; ``0`` (or less) means no bound."""

    first_token: float = 30.0
    stall: float = 20.0

    @property
    def active(self) -> bool:
        return self.first_token > 0 or self.stall > 0


def _first_token_limit(seconds: float, called: float) -> float:
    return max(0.0, wait_started(called) + seconds - time.monotonic())


def _first_token_error(seconds: float) -> ModelDeadline:
    return ModelDeadline(f"the model sent no answer within {seconds:g} s (model_first_token_seconds)")


def _stall_error(seconds: float) -> ModelDeadline:
    return ModelDeadline(f"the model stopped sending for {seconds:g} s mid-answer (model_stall_seconds)")


def _is_progress_only(chunk: ChatChunk) -> bool:
    """An empty chunk an adapter yields to show bytes are arriving (tool-call fragments): it resets the stall
    clock but is not passed on, so callers see the same chunks as before."""
    return not (chunk.content or chunk.reasoning_content or chunk.tool_calls or chunk.finish_reason
                or chunk.usage is not None)


class DeadlineChatModel(ChatModelWrapper):
    """A ``ChatModel`` whose calls end with :class:`ModelDeadline` when the model stops answering."""

    def __init__(self, inner: ChatModel, deadlines: Deadlines) -> None:
        super().__init__(inner)
        self._deadlines = deadlines

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        seconds = self._deadlines.first_token
        if seconds <= 0:
            return await self._inner.chat(messages, options)
        bound = asyncio.timeout(_first_token_limit(seconds, time.monotonic()))
        try:
            async with bound:
                response = await self._inner.chat(messages, options)
        except TimeoutError as exc:
            if bound.expired():
                raise _first_token_error(seconds) from exc
            raise
        note_progress()
        return response

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        called = time.monotonic()
        first, stall = self._deadlines.first_token, self._deadlines.stall
        inner = self._inner.stream(messages, options)
        started = False
        try:
            while True:
                if started:
                    limit, error = (stall if stall > 0 else None), _stall_error(stall)
                else:
                    limit = _first_token_limit(first, called) if first > 0 else None
                    error = _first_token_error(first)
                bound = asyncio.timeout(limit)
                try:
                    async with bound:
                        chunk = await anext(inner)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    if bound.expired():
                        raise error from exc
                    raise
                note_progress()
                started = True  # a progress-only chunk too: the answer's bytes are arriving
                if not _is_progress_only(chunk):
                    yield chunk
        finally:
            await close_stream(inner)
