"""The agent's model calls counted into the turn's usage (``TurnContext.usage``): every call the engine makes
— its rounds, the final synthesis, context consolidation — goes through this wrapper, so no call site has to
remember to count."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from knora.ports.chat import (
    ChatChunk,
    ChatMessage,
    ChatModel,
    ChatModelWrapper,
    ChatOptions,
    ChatResponse,
    close_stream,
)
from knora.ports.turn import TurnContext


class CountedModel(ChatModelWrapper):
    """A ``ChatModel`` that adds what each call reports to ``ctx.usage`` and is otherwise the model."""

    def __init__(self, model: ChatModel, ctx: TurnContext) -> None:
        super().__init__(model)
        self._ctx = ctx

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        response = await self._inner.chat(messages, options)
        self._ctx.add_usage(response.usage)
        return response

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        inner = self._inner.stream(messages, options)
        try:
            async for chunk in inner:
                self._ctx.add_usage(chunk.usage)
                yield chunk
        finally:
            await close_stream(inner)
