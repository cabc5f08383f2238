"""The agent's model calls counted into the turn's usage (``TurnContext.usage``): every call the engine makes
— its rounds, the final synthesis, context consolidation — goes through this wrapper, so no call site has to
remember to count."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from knora.ports.chat import ChatChunk, ChatMessage, ChatModel, ChatOptions, ChatResponse, close_stream
from knora.ports.turn import TurnContext


class CountedModel:
    """A ``ChatModel`` that adds what each call reports to ``ctx.usage`` and is otherwise the model."""

    def __init__(self, model: ChatModel, ctx: TurnContext) -> None:
        self.model = model
        self._ctx = ctx

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def supports_tools(self) -> bool:
        return self.model.supports_tools

    def __getattr__(self, name: str) -> Any:
        # Optional capabilities callers probe with getattr (``generative``, ``close``) stay the model's.
        return getattr(self.model, name)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        response = await self.model.chat(messages, options)
        self._ctx.add_usage(response.usage)
        return response

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        inner = self.model.stream(messages, options)
        try:
            async for chunk in inner:
                self._ctx.add_usage(chunk.usage)
                yield chunk
        finally:
            await close_stream(inner)
