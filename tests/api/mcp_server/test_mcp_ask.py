"""The ``ask`` tool's turn, through the SDK's in-process client (the server definition without a transport):
a cancelled call stops its turn as the UI's stop button does, and the answer's marks match its sources."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from knora.api.mcp_server.server import build_server
from knora.api.mcp_server.state import Caller, McpState
from knora.root import Services
from knora.settings import Settings
from tests.conftest import started
from tests.polling import eventually
from tests.services.streaming.runners import CHUNK_1, CHUNK_2, DOC_1, ScriptedRunner

pytestmark = pytest.mark.integration


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        await services.kb_service.create(services.default_tenant_id, {"name": "manual"})
        yield services


def server_over(c: Services) -> MCPServer[McpState]:
    @asynccontextmanager
    async def lifespan(_: MCPServer[McpState]) -> AsyncIterator[McpState]:
        yield McpState(services=c, caller=Caller(tenant_id=c.default_tenant_id))

    return build_server(lifespan)


async def test_sources_are_numbered_as_the_marks(c: Services) -> None:
    c.runners.quick = ScriptedRunner()
    async with Client(server_over(c)) as client:
        result = await client.call_tool("ask", {"question": "How does Knora stream?"})
    got: dict[str, Any] = result.structured_content or {}
    assert got["answer"] == "Knora streams answers[1] and stops anywhere[2]. Bogus."
    assert [(s["number"], s["chunk_id"], s["document_id"], s["title"]) for s in got["sources"]] == [
        (1, CHUNK_1, DOC_1, "Manual"), (2, CHUNK_2, DOC_1, "Manual")]


async def test_a_cancelled_call_stops_its_turn(c: Services) -> None:
    runner = ScriptedRunner(gate=asyncio.Event())  # answers one delta, then waits (for the stop)
    c.runners.quick = runner
    async with Client(server_over(c)) as client:
        call = asyncio.create_task(client.call_tool("ask", {"question": "How does Knora stream?"}))
        await asyncio.wait_for(runner.started.wait(), 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    async def ended() -> list[str]:
        sessions, _ = await c.session_service.list_sessions(c.default_tenant_id, page=1, page_size=10)
        messages = await c.session_service.load_messages(c.default_tenant_id, sessions[0].id)
        events = await c.stream_log.read(sessions[0].id, messages[-1].id)
        done = messages[-1].is_completed and not c.chat_service.is_running(messages[-1].id)
        return [e.type for e in events] if done else []

    assert "stop" in await eventually(ended)  # ended by the stop: the runner itself never finishes
