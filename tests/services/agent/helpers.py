"""Helpers for agent tests: a real OpenAI client against the fake model server, an event recorder, test
tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from knora.adapters.llm.openai_chat import OpenAIChatModel
from knora.domain.stream import BusEvent, Event
from knora.ports.tool import ToolContext, ToolResult
from knora.services.agent.config import EngineConfig
from knora.services.agent.engine import AgentEngine, EngineResult
from knora.services.agent.registry import ToolRegistry
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from tests.fakes.model_server import FakeModelServer

OPEN_MODELS: list[OpenAIChatModel] = []  # closed by the autouse fixture in conftest


def openai_model(fake: FakeModelServer, *, supports_tools: bool = True) -> OpenAIChatModel:
    # max_retries=0: retries under test are the engine's, not the SDK's
    model = OpenAIChatModel("fake-chat", base_url=fake.base_url, api_key="x", max_retries=0, timeout=10,
                            supports_tools=supports_tools)
    OPEN_MODELS.append(model)
    return model


async def close_models() -> None:
    while OPEN_MODELS:
        await OPEN_MODELS.pop().close()


class Recorder:
    def __init__(self, bus: EventBus) -> None:
        self.events: list[Event] = []
        bus.subscribe(None, self._on)

    async def _on(self, e: Event) -> None:
        self.events.append(e)

    def of(self, t: BusEvent) -> list[Event]:
        return [e for e in self.events if e.type == t]


@dataclass
class FuncTool:
    """A tool defined by a coroutine, for exercising the engine with known behaviour."""

    name: str
    fn: Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]
    parameters: dict[str, Any] = field(default_factory=lambda: {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    description: str = "a test tool"
    calls: list[dict[str, Any]] = field(default_factory=list)
    timeout_seconds: float | None = None
    opaque_arguments: bool = False

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.calls.append(args)
        return await self.fn(args, ctx)


def echo_tool(name: str = "lookup") -> FuncTool:
    async def fn(args: dict[str, Any], _ctx: ToolContext) -> ToolResult:
        return ToolResult(output=f"result for {args['q']}")
    return FuncTool(name, fn)


@dataclass
class Harness:
    model: Any
    registry: ToolRegistry
    bus: EventBus
    rec: Recorder
    refs: ReferenceRegistry
    cancelled: asyncio.Event
    config: EngineConfig

    def engine(self) -> AgentEngine:
        return AgentEngine(self.model, self.registry, self.config, bus=self.bus, references=self.refs,
                           tool_context=ToolContext(tenant_id=1, session_id="s", knowledge_base_ids=["kb1"]),
                           cancelled=self.cancelled)

    async def run(self, query: str = "question?") -> EngineResult:
        return await self.engine().run("system prompt", [], query, query)


def harness(model: Any, tools: list[Any], **config: Any) -> Harness:
    registry = ToolRegistry(default_timeout=config.pop("tool_timeout", 5.0))
    for t in tools:
        registry.register(t)
    bus = EventBus()
    cfg = EngineConfig(**{"retry_delays": [0.0, 0.0], **config})
    return Harness(model, registry, bus, Recorder(bus), ReferenceRegistry(), asyncio.Event(), cfg)
