"""The in-process function model keeps the ChatModel contract: what chat returns, stream delivers in
deltas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knora.ports.chat import ChatMessage, ChatModel, ChatOptions, ChatResponse, ModelError
from tests.fakes.function_model import FunctionModel, reply, script, tool_call

pytestmark = pytest.mark.unit

LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


async def collect(model: FunctionModel, messages: list[ChatMessage], **options: Any) -> ChatResponse:
    """The stream assembled the way the agent engine reads it."""
    content, reasoning, last = "", "", None
    async for chunk in model.stream(messages, ChatOptions(**options)):
        content += chunk.content
        reasoning += chunk.reasoning_content
        last = chunk
    assert last is not None
    assert last.finish_reason is not None
    return ChatResponse(content=content, reasoning_content=reasoning, tool_calls=last.tool_calls,
                        finish_reason=last.finish_reason, usage=last.usage)


def test_satisfies_the_port() -> None:
    model = FunctionModel(lambda _m, _t: "hi", model_id="function:x", supports_tools=False)
    assert isinstance(model, ChatModel)
    assert model.model_id == "function:x"
    assert model.supports_tools is False


async def test_the_function_sees_messages_and_tools() -> None:
    seen: list[tuple[list[str], list[str]]] = []

    def answer(messages: list[ChatMessage], tools: list[dict[str, Any]]) -> str:
        seen.append(([m.content for m in messages], [t["function"]["name"] for t in tools]))
        return f"you said {messages[-1].content}"

    model = FunctionModel(answer)
    msgs = [ChatMessage(role="system", content="s"), ChatMessage(role="user", content="hello")]
    resp = await model.chat(msgs, ChatOptions(tools=[LOOKUP], temperature=0.2))
    assert resp.content == "you said hello"
    assert resp.finish_reason == "stop"
    assert resp.tool_calls == []
    assert resp.usage is not None
    assert resp.usage.total_tokens > 0
    assert seen == [(["s", "hello"], ["lookup"])]
    (req,) = model.requests
    assert req.tool_names == ["lookup"]
    assert req.options.temperature == 0.2
    assert req.stream is False
    msgs[1].content = "changed later"
    assert req.messages[1].content == "hello"  # recorded as sent


async def test_stream_matches_chat_in_deltas() -> None:
    call = tool_call("lookup", {"q": "tea"}, "c1")
    full = reply("The answer is 42.", reasoning="let me think", tool_calls=[call])
    model = script(full, full, chunk_size=3)
    msgs = [ChatMessage(role="user", content="q")]
    deltas = [c async for c in model.stream(msgs)]
    assert len([d for d in deltas if d.content]) == 6
    assert deltas[0].reasoning_content == "let"
    assert all(not d.tool_calls and d.finish_reason is None for d in deltas[:-1])
    chat = await model.chat(msgs)
    streamed = await collect(script(full, chunk_size=3), msgs)
    assert streamed.model_dump() == chat.model_dump()
    assert chat.tool_calls == [call]
    assert chat.finish_reason == "tool_calls"
    assert json.loads(chat.tool_calls[0].arguments) == {"q": "tea"}
    assert [r.stream for r in model.requests] == [True, False]


async def test_async_functions_errors_and_running_out() -> None:
    async def failing(_m: list[ChatMessage], _t: list[dict[str, Any]]) -> str:
        raise ModelError("rate limited", transient=True, status=429)

    with pytest.raises(ModelError) as err:
        await FunctionModel(failing).chat([ChatMessage(role="user", content="q")])
    assert err.value.transient
    assert err.value.status == 429
    model = script("one")
    assert (await model.chat([])).content == "one"
    with pytest.raises(AssertionError, match="more often than scripted"):
        await model.chat([])
