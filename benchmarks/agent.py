"""Agent engine overhead per ReAct round, model time excluded. Prints one JSON line.

The model is the fake OpenAI-compatible server (zero latency) reached through the real openai client; time
spent inside the model's stream (HTTP, SSE parsing in the client) is measured and subtracted, so the figure is
the engine's own cost per round: context management, sanitising, event emission, argument parsing and
validation, tool dispatch through the registry, model-facing rendering with handles, message bookkeeping.

    python benchmarks/agent.py [--turns 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.adapters.llm.openai_chat import OpenAIChatModel
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, ToolCall
from knora.ports.tool import ToolContext, ToolResult
from knora.services.agent.config import EngineConfig
from knora.services.agent.engine import AgentEngine
from knora.services.agent.registry import ToolRegistry
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from tests.fakes.model_server import FakeModelServer, Reply


class TimedModel:
    """Delegates to a real model and accumulates the wall time spent waiting on it."""

    def __init__(self, inner: OpenAIChatModel) -> None:
        self.inner, self.seconds = inner, 0.0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def supports_tools(self) -> bool:
        return True

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        t = time.perf_counter()
        try:
            return await self.inner.chat(messages, options)
        finally:
            self.seconds += time.perf_counter() - t

    async def stream(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
                     ) -> AsyncIterator[ChatChunk]:
        it = self.inner.stream(messages, options).__aiter__()
        while True:
            t = time.perf_counter()
            try:
                chunk = await it.__anext__()
            except StopAsyncIteration:
                self.seconds += time.perf_counter() - t
                return
            self.seconds += time.perf_counter() - t
            yield chunk


class ScriptModel:
    """An in-process model with the same script and no I/O: the engine's cost with nothing else around it."""

    model_id = "bench:inprocess"
    supports_tools = True

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.seconds = 0.0

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        return ChatResponse(content="summary")

    async def stream(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
                     ) -> AsyncIterator[ChatChunk]:
        done = sum(1 for m in messages if m.role == "tool")
        if done < self.rounds - 1:
            yield ChatChunk(content="checking")
            yield ChatChunk(finish_reason="tool_calls", tool_calls=[ToolCall(
                id=f"call_{done}", name="search", arguments=json.dumps({"q": f"q{done}"}))])
            return
        for _ in range(4):
            yield ChatChunk(content="final answer " * 5)
        yield ChatChunk(finish_reason="stop")


class SearchTool:
    """Returns knowledge rows, so every round also exercises handle registration and XML rendering."""

    name = "search"
    description = "search"
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"q": {"type": "string"}},
                                            "required": ["q"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        rows = [{"chunk_id": f"{args['q']}-{i:04d}-0000-4000-8000-000000000000", "knowledge_id": f"doc-{i}",
                 "knowledge_base_id": "kb", "knowledge_title": f"Doc {i}", "chunk_index": i,
                 "content": "lorem ipsum " * 40} for i in range(10)]
        return ToolResult(output="rows", data={"display_type": "search_results", "results": rows})


async def one_turn(model: Any, rounds: int) -> tuple[float, int]:
    registry = ToolRegistry()
    registry.register(SearchTool())
    bus = EventBus()
    sink: list[Any] = []

    async def collect(e: Any) -> None:
        sink.append(e)

    bus.subscribe(None, collect)
    engine = AgentEngine(model, registry, EngineConfig(max_iterations=rounds + 2), bus=bus,
                         references=ReferenceRegistry(), tool_context=ToolContext(tenant_id=1))
    t = time.perf_counter()
    result = await engine.run("system", [], "question", "question")
    total = time.perf_counter() - t
    assert result.stop_reason == "natural_stop", result
    return total, result.rounds + 1


async def inprocess(turns: int, rounds: int) -> list[float]:
    out = []
    for turn in range(turns + 1):
        total, n = await one_turn(ScriptModel(rounds), rounds)
        if turn:
            out.append(total * 1000 / n)
    return sorted(out)


async def main(turns: int, rounds: int) -> dict[str, Any]:
    per_round: list[float] = []
    model_per_round: list[float] = []
    with FakeModelServer() as fake:
        def reply(body: dict[str, Any]) -> Reply:
            done = sum(1 for m in body["messages"] if m["role"] == "tool")
            if done < rounds - 1:
                return Reply(content="checking", tool_calls=[{"name": "search", "arguments": json.dumps(
                    {"q": f"q{done}"})}], chunk_size=64)
            return Reply(content="final answer " * 20, chunk_size=64)

        fake.handler = reply
        inner = OpenAIChatModel("fake-chat", base_url=fake.base_url, api_key="x", max_retries=0)
        for turn in range(turns + 1):  # the first turn warms up connections and imports
            model = TimedModel(inner)
            registry = ToolRegistry()
            registry.register(SearchTool())
            bus = EventBus()
            sink: list[Any] = []

            async def collect(e: Any, sink: list[Any] = sink) -> None:
                sink.append(e)

            bus.subscribe(None, collect)
            engine = AgentEngine(model, registry, EngineConfig(max_iterations=rounds + 2), bus=bus,
                                 references=ReferenceRegistry(), tool_context=ToolContext(tenant_id=1))
            t = time.perf_counter()
            result = await engine.run("system", [], "question", "question")
            total = time.perf_counter() - t
            assert result.stop_reason == "natural_stop", result
            if turn:
                n = result.rounds + 1
                per_round.append((total - model.seconds) * 1000 / n)
                model_per_round.append(model.seconds * 1000 / n)
        await inner.close()
    per_round.sort()
    pure = await inprocess(turns, rounds)
    return {"benchmark": "agent_engine_overhead", "turns": turns, "rounds_per_turn": rounds,
            "overhead_ms_per_round_mean": round(statistics.mean(per_round), 3),
            "overhead_ms_per_round_p50": round(per_round[len(per_round) // 2], 3),
            "overhead_ms_per_round_p95": round(per_round[min(len(per_round) - 1, int(len(per_round) * 0.95))],
                                               3),
            "model_ms_per_round_mean_excluded": round(statistics.mean(model_per_round), 3),
            "inprocess_model_ms_per_round_p50": round(pure[len(pure) // 2], 3),
            "inprocess_model_ms_per_round_mean": round(statistics.mean(pure), 3)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.turns, a.rounds))))
