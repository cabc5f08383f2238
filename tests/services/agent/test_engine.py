"""The ReAct loop driven by the fake model server through the real openai client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from knora.domain.stream import BusEvent
from knora.ports.tool import ToolContext, ToolResult
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.agent.helpers import FuncTool, echo_tool, harness, openai_model

pytestmark = pytest.mark.integration


def call(name: str, args: Any, cid: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}
    if cid:
        out["id"] = cid
    return out


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


class TestRounds:
    async def test_multi_round_tool_use_feeds_results_back(self, fake: FakeModelServer) -> None:
        tool = echo_tool()
        fake.script([Reply(tool_calls=[call("lookup", {"q": "alpha"})]),
                     Reply(tool_calls=[call("lookup", {"q": "beta"})]),
                     Reply(content="Alpha and beta.", chunk_size=3)])
        h = harness(openai_model(fake), [tool])
        res = await h.run()
        assert res.answer == "Alpha and beta."
        assert res.stop_reason == "natural_stop"
        assert res.rounds == 2
        assert [c["q"] for c in tool.calls] == ["alpha", "beta"]
        second, third = fake.chat_requests[1], fake.chat_requests[2]
        assert [m["content"] for m in tool_messages(second)] == ["result for alpha"]
        assert [m["content"] for m in tool_messages(third)] == ["result for alpha", "result for beta"]
        assert [t["function"]["name"] for t in fake.chat_requests[0]["tools"]] == ["lookup"]
        assert len(h.rec.of(BusEvent.TOOL_CALL)) == 2
        assert len(h.rec.of(BusEvent.TOOL_RESULT)) == 2
        answers = h.rec.of(BusEvent.FINAL_ANSWER)
        assert "".join(e.data["content"] for e in answers) == "Alpha and beta."
        assert answers[-1].data["done"] is True
        steps = res.steps
        assert [len(s["tool_calls"]) for s in steps] == [1, 1, 0]
        assert steps[0]["tool_calls"][0]["result"]["output"] == "result for alpha"

    async def test_preamble_moves_into_the_step_and_is_not_the_answer(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content="Let me search first.", tool_calls=[call("lookup", {"q": "x"})]),
                     Reply(content="The answer is 42.")])
        h = harness(openai_model(fake), [echo_tool()])
        res = await h.run()
        assert res.answer == "The answer is 42."
        assert res.steps[0]["thought"] == "Let me search first."
        answers = h.rec.of(BusEvent.FINAL_ANSWER)
        ids = {e.data["event_id"] for e in answers}
        assert len(ids) == 2  # the preamble streamed live under its own id, superseded by the stream handler
        preamble_id = answers[0].data["event_id"]
        assert "".join(e.data["content"] for e in answers if e.data["event_id"] == preamble_id) == \
            "Let me search first."
        first_call = h.rec.events.index(h.rec.of(BusEvent.TOOL_CALL)[0])
        assert h.rec.events.index(answers[0]) < first_call
        # the assistant message replayed to the model keeps the preamble next to its tool call
        assistant = next(m for m in fake.chat_requests[1]["messages"] if m["role"] == "assistant")
        assert assistant["content"] == "Let me search first."
        assert assistant["tool_calls"]

    async def test_parallel_tool_calls_run_concurrently(self, fake: FakeModelServer) -> None:
        arrived: list[str] = []
        both = asyncio.Event()

        async def rendezvous(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            arrived.append(args["q"])
            if len(arrived) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), 2.0)  # only returns if the other call runs at the same time
            return ToolResult(output=f"met {args['q']}")

        fake.script([Reply(tool_calls=[call("meet", {"q": "a"}), call("meet", {"q": "b"})]),
                     Reply(content="ok")])
        h = harness(openai_model(fake), [FuncTool("meet", rendezvous)], parallel_tool_calls=True)
        res = await h.run()
        assert [tc["result"]["success"] for tc in res.steps[0]["tool_calls"]] == [True, True]
        assert sorted(m["content"] for m in tool_messages(fake.chat_requests[1])) == ["met a", "met b"]

    async def test_serial_is_the_default(self, fake: FakeModelServer) -> None:
        order: list[str] = []

        async def record(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            order.append(f"start {args['q']}")
            await asyncio.sleep(0.01)
            order.append(f"end {args['q']}")
            return ToolResult(output="done")

        fake.script([Reply(tool_calls=[call("rec", {"q": "a"}), call("rec", {"q": "b"})]),
                     Reply(content="ok")])
        await harness(openai_model(fake), [FuncTool("rec", record)]).run()
        assert order == ["start a", "end a", "start b", "end b"]

    async def test_max_iterations_then_synthesis_without_tools(self, fake: FakeModelServer) -> None:
        counter = iter(range(100))
        fake.handler = lambda body: (Reply(tool_calls=[call("lookup", {"q": f"q{next(counter)}"})])
                                     if body.get("tools") else Reply(content="Synthesised answer."))
        tool = echo_tool()
        h = harness(openai_model(fake), [tool], max_iterations=3)
        res = await h.run("what?")
        assert res.stop_reason == "max_iterations"
        assert res.rounds == 3
        assert len(tool.calls) == 3
        assert res.answer == "Synthesised answer."
        last = fake.chat_requests[-1]
        assert not last.get("tools")
        texts = [m["content"] for m in last["messages"] if m["role"] == "user"]
        assert any(t.startswith("Tool lookup returned: result for q0") for t in texts)
        assert "User question: what?" in texts[-1]

    async def test_synthesis_failure_gives_the_fallback_text(self, fake: FakeModelServer) -> None:
        fake.handler = lambda body: (Reply(tool_calls=[call("lookup", {"q": str(len(fake.chat_requests))})])
                                     if body.get("tools") else Reply(status=400, error="bad request"))
        res = await harness(openai_model(fake), [echo_tool()], max_iterations=2).run()
        assert res.answer == "Sorry, I was unable to generate a complete answer."
        assert res.is_fallback


class TestGuards:
    async def test_repeated_identical_calls_are_not_executed_and_stop_the_run(self,
                                                                              fake: FakeModelServer) -> None:
        fake.handler = lambda body: (Reply(tool_calls=[call("lookup", {"q": "same"})]) if body.get("tools")
                                     else Reply(content="Best effort answer."))
        tool = echo_tool()
        h = harness(openai_model(fake), [tool], max_iterations=20)
        res = await h.run()
        assert len(tool.calls) == 1
        assert res.stop_reason == "duplicate_calls"
        assert res.answer == "Best effort answer."
        assert "repeating identical tool calls" in h.rec.of(BusEvent.REFLECTION)[0].data["content"]
        dup = res.steps[1]["tool_calls"][0]["result"]
        assert not dup["success"]
        assert "Duplicate tool call" in dup["error"]
        assert len(fake.chat_requests) == 4  # 3 rounds, then synthesis — far below the cap of 20

    async def test_invalid_arguments_are_refused_before_execute(self, fake: FakeModelServer) -> None:
        async def count(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            return ToolResult(output=str(args["n"]))

        tool = FuncTool("count", count, parameters={"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1}}, "required": ["n"]})
        fake.script([Reply(tool_calls=[call("count", {"n": "abc"})]), Reply(tool_calls=[call("count",
                                                                                             {"n": "3"})]),
                     Reply(content="done")])
        h = harness(openai_model(fake), [tool])
        res = await h.run()
        first = h.rec.of(BusEvent.TOOL_RESULT)[0].data
        assert first["success"] is False
        assert "n:" in first["error"]
        assert "Analyze the error" in first["error"]
        assert tool.calls == [{"n": 3}]  # the string "3" was coerced; "abc" never reached the tool
        assert tool_messages(fake.chat_requests[1])[0]["content"].startswith("Error: Invalid tool arguments")
        assert res.answer == "done"

    async def test_tool_raising_and_timing_out_are_observations(self, fake: FakeModelServer) -> None:
        async def boom(_args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            raise ValueError("kaboom")

        async def slow(_args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            await asyncio.sleep(30)
            return ToolResult(output="never")

        fake.script([Reply(tool_calls=[call("boom", {"q": "1"}), call("slow", {"q": "2"})]),
                     Reply(content="ok")])
        h = harness(openai_model(fake), [FuncTool("boom", boom), FuncTool("slow", slow, timeout_seconds=0.2)])
        res = await h.run()
        results = [e.data for e in h.rec.of(BusEvent.TOOL_RESULT)]
        assert "ValueError: kaboom" in results[0]["error"]
        assert "timed out after 0.2s" in results[1]["error"]
        assert res.answer == "ok"

    async def test_unknown_tool(self, fake: FakeModelServer) -> None:
        fake.script([Reply(tool_calls=[call("nope", {})]), Reply(content="ok")])
        h = harness(openai_model(fake), [echo_tool()])
        await h.run()
        assert "tool not found: nope" in h.rec.of(BusEvent.TOOL_RESULT)[0].data["error"]

    async def test_malformed_tool_call_arguments(self, fake: FakeModelServer) -> None:
        fake.script([Reply(tool_calls=[call("lookup", '{"q": "fixable",')]),
                     Reply(tool_calls=[call("lookup", "this is not json")]), Reply(content="ok")])
        tool = echo_tool()
        h = harness(openai_model(fake), [tool])
        res = await h.run()
        assert tool.calls == [{"q": "fixable"}]
        second = h.rec.of(BusEvent.TOOL_RESULT)[1].data
        assert second["success"] is False
        assert second["error"].startswith("Failed to parse tool arguments")
        assert res.answer == "ok"

    async def test_unknown_handles_in_arguments_are_refused(self, fake: FakeModelServer) -> None:
        async def read(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            return ToolResult(output="read")

        tool = FuncTool("read", read, parameters={"type": "object", "properties": {
            "knowledge_id": {"type": "string"}}})
        fake.script([Reply(tool_calls=[call("read", {"knowledge_id": "d7"})]), Reply(content="ok")])
        h = harness(openai_model(fake), [tool])
        await h.run()
        assert tool.calls == []
        assert "unresolved model handles: ['d7']" in h.rec.of(BusEvent.TOOL_RESULT)[0].data["error"]


class TestModelBehaviour:
    async def test_transient_errors_are_retried(self, fake: FakeModelServer) -> None:
        fake.script([Reply(status=503, error="overloaded"), Reply(status=429, error="slow down"),
                     Reply(content="finally")])
        res = await harness(openai_model(fake), []).run()
        assert res.answer == "finally"
        assert len(fake.chat_requests) == 3

    async def test_persistent_error_without_tool_calls_ends_with_an_error_event(
            self, fake: FakeModelServer) -> None:
        fake.script([Reply(status=400, error="bad model")])
        h = harness(openai_model(fake), [])
        res = await h.run()
        assert res.answer == ""
        assert "LLM call failed" in res.error
        err = h.rec.of(BusEvent.ERROR)
        assert len(err) == 1
        assert err[0].data["stage"] == "agent_execution"

    async def test_empty_answer_is_nudged(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content=""), Reply(content="Now a real answer.")])
        res = await harness(openai_model(fake), []).run()
        assert res.answer == "Now a real answer."
        # the nudge is merged into the user turn (consecutive same-role messages are merged, spec §6.4.1)
        assert fake.chat_requests[1]["messages"][-1]["content"].endswith(
            "Please provide your complete answer now as plain text.")

    async def test_content_filter_is_terminal(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content="", finish_reason="content_filter")])
        res = await harness(openai_model(fake), []).run()
        assert res.stop_reason == "content_filter"
        assert "content safety policy" in res.answer

    async def test_inline_think_blocks_become_thoughts(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content="Visible answer.", reasoning_content="hidden reasoning", think_tags=True,
                           chunk_size=2)])
        h = harness(openai_model(fake), [])
        res = await h.run()
        assert res.answer == "Visible answer."
        thoughts = "".join(e.data["content"] for e in h.rec.of(BusEvent.THOUGHT))
        assert thoughts == "hidden reasoning"
        assert "think" not in "".join(e.data["content"] for e in h.rec.of(BusEvent.FINAL_ANSWER))

    async def test_text_react_protocol_for_models_without_tools(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content='Thought: I should look.\nAction: lookup\nAction Input: {"q": "gamma"}'),
                     Reply(content="Thought: got it\nFinal Answer: Gamma it is.")])
        tool = echo_tool()
        h = harness(openai_model(fake, supports_tools=False), [tool])
        res = await h.run()
        assert tool.calls == [{"q": "gamma"}]
        assert res.answer == "Gamma it is."
        first = fake.chat_requests[0]
        assert not first.get("tools")
        assert "Action Input:" in first["messages"][0]["content"]
        assert "Observation (lookup):\nresult for gamma" in fake.chat_requests[1]["messages"][-1]["content"]
        assert "".join(e.data["content"] for e in h.rec.of(BusEvent.FINAL_ANSWER)) == "Gamma it is."

    async def test_cancelled_run_stops_without_an_answer(self, fake: FakeModelServer) -> None:
        h = harness(openai_model(fake), [])
        h.cancelled.set()
        res = await h.run()
        assert res.stop_reason == "cancelled"
        assert res.answer == ""
        assert fake.chat_requests == []


    async def test_stop_during_the_stream_ends_the_run(self, fake: FakeModelServer) -> None:
        fake.script([Reply(content="a long answer " * 20, chunk_size=4, delay_per_chunk=0.01)])
        h = harness(openai_model(fake), [echo_tool()])

        async def stop_on_first_delta(_e: Any) -> None:
            h.cancelled.set()

        h.bus.subscribe(BusEvent.FINAL_ANSWER, stop_on_first_delta)
        res = await h.run()
        assert res.stop_reason == "cancelled"
        assert res.answer == ""
        assert len(h.rec.of(BusEvent.FINAL_ANSWER)) < 5
        assert len(fake.chat_requests) == 1


class TestReferences:
    async def test_knowledge_rows_are_rendered_with_handles_and_accumulated(self,
                                                                            fake: FakeModelServer) -> None:
        chunk_id = "6f1c2d9e-0000-4000-8000-000000000001"

        async def search(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            return ToolResult(output=f"raw {chunk_id}", data={"display_type": "search_results", "results": [
                {"chunk_id": chunk_id, "knowledge_id": "doc-1", "knowledge_base_id": "kb-1",
                 "knowledge_title": "Handbook", "chunk_index": 3, "content": "Leave is 20 days."}]})

        fake.script([Reply(tool_calls=[call("search", {"q": "leave"})]),
                     Reply(content='20 days <ref id="c1"/>')])
        h = harness(openai_model(fake), [FuncTool("search", search)])
        res = await h.run()
        rendered = tool_messages(fake.chat_requests[1])[0]["content"]
        assert '<chunk id="c1" index="3"' in rendered
        assert "<content>Leave is 20 days.</content>" in rendered
        assert chunk_id not in rendered
        assert 'title="Handbook"' in rendered
        refs = h.rec.of(BusEvent.REFERENCES)
        assert len(refs) == 1
        assert refs[0].data["references"][0]["id"] == chunk_id
        assert [r.id for r in res.references] == [chunk_id]
        assert res.answer == '20 days <ref id="c1"/>'

    async def test_handles_in_arguments_are_decoded_for_the_tool_only(self, fake: FakeModelServer) -> None:
        chunk_id = "6f1c2d9e-0000-4000-8000-000000000002"

        async def search(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            return ToolResult(data={"display_type": "search_results", "results": [
                {"chunk_id": chunk_id, "knowledge_id": "doc-9", "knowledge_base_id": "kb-9",
                 "content": "text"}]})

        async def read(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
            return ToolResult(output=f"read {args['chunk_id']}")

        reader = FuncTool("read", read, parameters={"type": "object",
                                                    "properties": {"chunk_id": {"type": "string"}}})
        fake.script([Reply(tool_calls=[call("search", {"q": "x"})]),
                     Reply(tool_calls=[call("read", {"chunk_id": "c1"})]),
                     Reply(content="ok")])
        h = harness(openai_model(fake), [FuncTool("search", search), reader])
        await h.run()
        assert reader.calls == [{"chunk_id": chunk_id}]
        last = json.dumps(fake.chat_requests[2]["messages"])
        assert chunk_id not in last
        assert '\\"chunk_id\\": \\"c1\\"' in last
        assert "read c1" in last  # the tool's output mentioning the id is compacted back to the handle
