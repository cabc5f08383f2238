"""A ``ChatModel`` that reports each call to ``Metrics``: its time, its outcome and the tokens the model says
it used (``usage`` of the response, or of a stream's last chunk). Wrapped once in the registry, outside the
deadlines, so both runtimes and every provider are measured the same way; the extractive answerer is not a
model (its "tokens" are characters) and is not wrapped."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence

from knora.ports.chat import (
    ChatChunk,
    ChatMessage,
    ChatModel,
    ChatModelWrapper,
    ChatOptions,
    ChatResponse,
    Usage,
    close_stream,
)
from knora.ports.telemetry import Metrics


class MeteredChatModel(ChatModelWrapper):
    def __init__(self, inner: ChatModel, metrics: Metrics) -> None:
        super().__init__(inner)
        self._metrics = metrics

    def _usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self._metrics.tokens(self.model_id, "prompt", usage.prompt_tokens)
            self._metrics.tokens(self.model_id, "completion", usage.completion_tokens)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        started = time.monotonic()
        outcome = "error"
        try:
            response = await self._inner.chat(messages, options)
            outcome = "ok"
        finally:
            self._metrics.model_call(self.model_id, "chat", outcome, time.monotonic() - started)
        self._usage(response.usage)
        return response

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        started = time.monotonic()
        inner = self._inner.stream(messages, options)
        outcome = "error"
        usage: Usage | None = None
        try:
            async for chunk in inner:
                if chunk.usage is not None:
                    usage = chunk.usage
                yield chunk
            outcome = "ok"
        finally:
            await close_stream(inner)
            # a stream the caller closed early (a stop) is not an error of the model
            if outcome == "error" and usage is not None:
                outcome = "ok"
            self._metrics.model_call(self.model_id, "stream", outcome, time.monotonic() - started)
            self._usage(usage)
