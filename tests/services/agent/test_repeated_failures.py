"""The repeated-call guard also stops a model that repeats one invalid tool call (issue 20, item 9).

Before, calls the engine refused before execution (unparsable arguments, unresolved handles) were never
counted, so a model repeating one ran all iterations: 51 model calls with ``max_iterations=50``.
"""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.stream import BusEvent
from knora.ports.chat import ChatMessage
from knora.ports.tool import ToolContext, ToolResult
from tests.fakes.function_model import FunctionModel, Reply, reply, tool_call
from tests.services.agent.helpers import FuncTool, harness

pytestmark = pytest.mark.unit

ITERATIONS = 50


async def read(_args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
    return ToolResult(output="read")


def read_tool() -> FuncTool:
    return FuncTool("read", read, parameters={"type": "object", "properties": {
        "knowledge_id": {"type": "string"}}})


def always(arguments: dict[str, Any] | str) -> FunctionModel:
    """Calls ``read`` with the same arguments whenever tools are offered; answers when they are not."""

    def fn(_messages: list[ChatMessage], tools: list[dict[str, Any]]) -> Reply:
        return reply(tool_calls=[tool_call("read", arguments)]) if tools else "Best effort answer."

    return FunctionModel(fn)


@pytest.mark.parametrize(("arguments", "first_error"), [
    ("this is not json", "Failed to parse tool arguments"),
    ({"knowledge_id": "d7"}, "unresolved model handles"),  # a handle the turn never issued
])
async def test_same_invalid_call_repeated_stops_the_run(arguments: dict[str, Any] | str,
                                                        first_error: str) -> None:
    model = always(arguments)
    tool = read_tool()
    h = harness(model, [tool], max_iterations=ITERATIONS)
    res = await h.run()
    assert tool.calls == []
    assert res.stop_reason == "duplicate_calls"
    assert res.answer == "Best effort answer."
    assert "repeating identical tool calls" in h.rec.of(BusEvent.REFLECTION)[0].data["content"]
    errors = [s["tool_calls"][0]["result"]["error"] for s in res.steps if s["tool_calls"]]
    assert first_error in errors[0]
    assert all("Duplicate tool call" in e for e in errors[1:])
    # the first refusal, two rounds of only duplicates (duplicate_rounds_limit), then the synthesis
    assert len(model.requests) == 4


async def test_different_invalid_calls_are_not_duplicates() -> None:
    """Only the same name and arguments count: a model correcting its arguments goes on."""
    script = iter([tool_call("read", "not json"), tool_call("read", "still {not json"),
                   tool_call("read", {"knowledge_id": "kb-doc-1"})])

    def fn(_messages: list[ChatMessage], tools: list[dict[str, Any]]) -> Reply:
        call = next(script, None)
        return reply(tool_calls=[call]) if call is not None and tools else "done"

    tool = read_tool()
    h = harness(FunctionModel(fn), [tool], max_iterations=ITERATIONS)
    res = await h.run()
    assert tool.calls == [{"knowledge_id": "kb-doc-1"}]
    assert res.stop_reason == "natural_stop"
    assert res.answer == "done"
