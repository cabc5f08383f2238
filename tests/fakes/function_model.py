"""An in-process chat model driven by a Python function, beside the HTTP fake (like pydantic-ai's
FunctionModel).

Where the test is about what Knora does with a model's replies — the agent loop, the runner, context
consolidation — and not about the wire (the OpenAI client, SSE parsing, retries on HTTP status), a
``FunctionModel`` says the same in less: no server thread, no socket, no JSON round trip, and the requests are
the ``ChatMessage`` objects Knora built. The function gets the messages and the tools offered (OpenAI function
definitions) and returns a ``ChatResponse`` or just the answer text; it may be sync or async, and may raise
``ModelError`` to play a failing model. ``script(...)`` makes one that gives canned replies in order.

``stream`` delivers what ``chat`` would, cut into ``chunk_size``-character deltas (reasoning first, then the
answer); as the ChatModel port says, the last chunk carries ``finish_reason``, the assembled ``tool_calls``
and the usage.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, ToolCall, Usage

Reply = ChatResponse | str
ModelFunction = Callable[[list[ChatMessage], list[dict[str, Any]]], Reply | Awaitable[Reply]]


@dataclass
class ModelRequest:
    """One call as the model received it."""

    messages: list[ChatMessage]
    options: ChatOptions
    stream: bool

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.options.tools

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None,
              call_id: str | None = None) -> ToolCall:
    """A tool call as a model would emit it (``arguments`` as JSON text; a string is passed on as it is)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
    return ToolCall(id=call_id or f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=raw)


def reply(content: str = "", *, tool_calls: Sequence[ToolCall] = (), reasoning: str = "",
          finish_reason: str | None = None) -> ChatResponse:
    calls = list(tool_calls)
    return ChatResponse(content=content, reasoning_content=reasoning, tool_calls=calls,
                        finish_reason=finish_reason or ("tool_calls" if calls else "stop"))


@dataclass
class FunctionModel:
    function: ModelFunction
    model_id: str = "function:test"
    supports_tools: bool = True
    chunk_size: int = 4
    requests: list[ModelRequest] = field(default_factory=list)

    async def _call(self, messages: Sequence[ChatMessage], options: ChatOptions | None,
                    stream: bool) -> ChatResponse:
        opts = options or ChatOptions()
        msgs = [m.model_copy(deep=True) for m in messages]  # as sent: later edits by the caller do not show
        self.requests.append(ModelRequest(msgs, opts.model_copy(deep=True), stream))
        out = self.function(msgs, list(opts.tools))
        if inspect.isawaitable(out):
            out = await out
        resp = reply(out) if isinstance(out, str) else out
        if resp.finish_reason is None:
            resp = resp.model_copy(update={"finish_reason": "tool_calls" if resp.tool_calls else "stop"})
        if resp.usage is None:
            prompt = sum(len(m.content) for m in msgs) // 4
            completion = (len(resp.content) + len(resp.reasoning_content)) // 4
            resp = resp.model_copy(update={"usage": Usage(prompt_tokens=max(1, prompt),
                                                          completion_tokens=max(1, completion),
                                                          total_tokens=max(1, prompt) + max(1, completion))})
        return resp

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        return await self._call(messages, options, stream=False)

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        resp = await self._call(messages, options, stream=True)
        size = max(1, self.chunk_size)
        for i in range(0, len(resp.reasoning_content), size):
            yield ChatChunk(reasoning_content=resp.reasoning_content[i:i + size])
        for i in range(0, len(resp.content), size):
            yield ChatChunk(content=resp.content[i:i + size])
        yield ChatChunk(tool_calls=resp.tool_calls, finish_reason=resp.finish_reason, usage=resp.usage)

    async def close(self) -> None:
        pass


def script(*replies: Reply, **kw: Any) -> FunctionModel:
    """A model that gives ``replies`` in order, one per call (running out is an error the test sees)."""
    queue = list(replies)

    def next_reply(_messages: list[ChatMessage], _tools: list[dict[str, Any]]) -> Reply:
        if not queue:
            raise AssertionError("the scripted model was called more often than scripted")
        return queue.pop(0)

    return FunctionModel(next_reply, **kw)
