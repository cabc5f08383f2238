"""The agent searches the web with the tenant's own provider (``/web-search-providers``) when the operator
configured none, and offers no ``web_search`` tool to a tenant without one (issue 13 item 9)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from knora.adapters.tools.registry import CATALOG
from knora.domain.models import AgentConfig
from knora.ports.tool import ToolDeps
from knora.ports.turn import TurnContext, TurnRequest
from knora.ports.websearch import WebResult, WebSearch
from knora.services.agent.runner import RunnerDeps, SmartReasoningRunner
from knora.services.citations.registry import ReferenceRegistry
from knora.services.streaming.bus import EventBus
from knora.settings import Settings
from tests.fakes.function_model import FunctionModel, reply, script, tool_call

pytestmark = pytest.mark.unit


class Web:
    name = "tenant-web"

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        self.queries.append(query)
        return [WebResult(title="Tea prices", url="https://news.example/tea", snippet="Up 5%.")]


class Tenants:
    """Tenant 1 has a default provider; the others have none."""

    def __init__(self, web: Web) -> None:
        self.web = web

    async def for_tenant(self, tenant_id: int) -> WebSearch | None:
        return self.web if tenant_id == 1 else None


class Models:
    def __init__(self, model: FunctionModel) -> None:
        self.model = model

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Any:
        return self.model


def _run(model: FunctionModel, web: Web, tenant_id: int) -> Any:
    deps = RunnerDeps(chat_models=Models(model),
                      tool_deps=ToolDeps(settings=Settings(sample_kb=False), web_searches=Tenants(web)),
                      catalog=CATALOG, skills_prompt=lambda allowed: "",
                      engine_overrides={"retry_delays": [0.0, 0.0]})
    req = TurnRequest(tenant_id=tenant_id, session_id="s", request_id="r", user_message_id="u",
                      assistant_message_id="a", query="tea prices?", web_search_enabled=True,
                      agent=AgentConfig(name="t", config={"allowed_tools": ["web_search"],
                                                          "web_search_enabled": True}))
    ctx = TurnContext(bus=EventBus(), references=ReferenceRegistry(), cancelled=asyncio.Event())
    return SmartReasoningRunner(deps).run(req, ctx)


async def test_the_tenants_provider_answers_the_tool() -> None:
    web = Web()
    model = script(reply(tool_calls=[tool_call("web_search", {"query": "tea prices"})]), "Up 5%.")
    out = await _run(model, web, tenant_id=1)
    assert web.queries == ["tea prices"]
    assert "web_search" in out.debug["tools"]
    assert out.answer == "Up 5%."


async def test_no_provider_no_tool() -> None:
    web = Web()
    out = await _run(script("I cannot search."), web, tenant_id=2)
    assert web.queries == []
    assert "web_search" not in out.debug["tools"]
