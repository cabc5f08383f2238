"""MCP tools served by a real MCP server (the SDK's, over Streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from knora.adapters.mcp.client import MCPClient, MCPUnavailable
from knora.adapters.mcp.tool import tool_name
from knora.adapters.mcp.toolset import MCPToolset
from knora.domain.mcp import MCPService
from knora.domain.stream import BusEvent, Event
from knora.netguard import tenant_policy
from knora.ports.tool import ApprovalDecision, ToolContext
from knora.services.agent.approval import ApprovalBroker
from tests.adapters.mcp.server import free_port, mcp_server, mcp_sse_server
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.agent.helpers import close_models, harness, openai_model

pytestmark = pytest.mark.integration

# the test servers listen on loopback, which a tenant's service may reach only when the operator allows it
LOOPBACK = tenant_policy(["127.0.0.1"])


class MemoryRepo:
    def __init__(self, services: list[MCPService]) -> None:
        self.services = services

    async def list(self, tenant_id: int) -> list[MCPService]:
        return [s for s in self.services if s.tenant_id == tenant_id]


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    with mcp_server() as running:
        yield running


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_models()


def service(url: str, **kw: Any) -> MCPService:
    return MCPService(tenant_id=1, name="Test Tools", transport_type="http-streamable", url=url, **kw)


class TestNaming:
    def test_sanitised_and_capped(self) -> None:
        assert tool_name("Test Tools", "delete-all") == "mcp_test_tools_delete_all"
        long = tool_name("S" * 80, "t" * 70)
        assert len(long) == 64
        assert long.startswith("mcp_ssss_")


class TestRealServer:
    async def test_tools_are_wrapped_and_called(self, server: tuple[str, dict[str, Any]]) -> None:
        url, _ = server
        tools = await MCPToolset(MemoryRepo([service(url)]), stdio_enabled=False, policy=LOOPBACK,
                                 approval=None).tools(1, "all", [])
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {"mcp_test_tools_add", "mcp_test_tools_explode", "mcp_test_tools_delete_all"}
        add = by_name["mcp_test_tools_add"]
        assert add.description.startswith("[MCP Service: Test Tools (external)] Add two integers")
        assert add.parameters["required"] == ["a", "b"]
        ok = await add.execute({"a": 2, "b": 40}, ToolContext(tenant_id=1))
        assert ok.success
        assert ok.output.endswith("\n42")
        assert "untrusted data" in ok.output
        bad = await by_name["mcp_test_tools_explode"].execute({"reason": "x"}, ToolContext(tenant_id=1))
        assert not bad.success
        assert "explode" in bad.error

    async def test_selection_modes(self, server: tuple[str, dict[str, Any]]) -> None:
        url, _ = server
        a, b = service(url), service(url, enabled=False)
        toolset = MCPToolset(MemoryRepo([a, b]), stdio_enabled=False, approval=None, policy=LOOPBACK)
        assert await toolset.tools(1, "none", []) == []
        assert await toolset.tools(1, "selected", []) == []
        assert len(await toolset.tools(1, "selected", [a.id])) == 3
        assert len(await toolset.tools(1, "all", [])) == 3  # the disabled service contributes nothing
        assert await toolset.tools(2, "all", []) == []  # other tenant

    async def test_engine_uses_an_mcp_tool(self, server: tuple[str, dict[str, Any]]) -> None:
        url, _ = server
        tools = await MCPToolset(MemoryRepo([service(url)]), stdio_enabled=False, policy=LOOPBACK,
                                 approval=None).tools(1, "all", [])
        with FakeModelServer() as fake:
            fake.script([Reply(tool_calls=[{"name": "mcp_test_tools_add",
                                            "arguments": json.dumps({"a": 1, "b": 2})}]),
                         Reply(content="It is 3.")])
            h = harness(openai_model(fake), tools)
            res = await h.run()
        assert res.answer == "It is 3."
        tool_msg = next(m for m in fake.chat_requests[1]["messages"] if m["role"] == "tool")
        assert tool_msg["content"].endswith("\n3")
        offered = sorted(t["function"]["name"] for t in fake.chat_requests[0]["tools"])
        assert offered == sorted(t.name for t in tools)


async def test_sse_transport() -> None:
    with mcp_sse_server() as (url, _state):
        svc = MCPService(tenant_id=1, name="Legacy SSE", transport_type="sse", url=url)
        toolset = MCPToolset(MemoryRepo([svc]), stdio_enabled=False, approval=None, policy=LOOPBACK)
        tools = await toolset.tools(1, "all", [])
        add = next(t for t in tools if t.name == "mcp_legacy_sse_add")
        res = await add.execute({"a": 20, "b": 22}, ToolContext(tenant_id=1))
    assert res.success
    assert res.output.endswith("\n42")


class TestBrokenServers:
    async def test_server_down(self) -> None:
        down = service(f"http://127.0.0.1:{free_port()}/mcp", advanced_config={"timeout": 3})
        with pytest.raises(MCPUnavailable):
            await MCPClient(down, policy=LOOPBACK).list_tools()
        toolset = MCPToolset(MemoryRepo([down]), stdio_enabled=False, approval=None, policy=LOOPBACK)
        assert await toolset.tools(1, "all", []) == []

    async def test_garbage_answers(self) -> None:
        class Garbage(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = b"<html>definitely not MCP</html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                return

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            bad = service(f"http://127.0.0.1:{httpd.server_address[1]}/mcp", advanced_config={"timeout": 3})
            with pytest.raises(MCPUnavailable):
                await MCPClient(bad, policy=LOOPBACK).list_tools()
        finally:
            httpd.shutdown()
            httpd.server_close()

    async def test_stdio_refused_unless_enabled(self) -> None:
        stdio = MCPService(tenant_id=1, name="local", transport_type="stdio",
                           stdio_config={"command": "true"})
        with pytest.raises(MCPUnavailable, match="disabled"):
            await MCPClient(stdio, stdio_enabled=False).list_tools()


class TestApproval:
    async def _run(self, url: str, decide: Any, timeout: float = 30.0) -> tuple[Any, list[Event]]:
        broker = ApprovalBroker()
        svc = service(url, tool_approvals={"delete-all": True})
        tools = await MCPToolset(MemoryRepo([svc]), stdio_enabled=False, approval=broker, policy=LOOPBACK,
                                 approval_timeout=timeout).tools(1, "all", [])
        with FakeModelServer() as fake:
            fake.script([Reply(tool_calls=[{"name": "mcp_test_tools_delete_all",
                                            "arguments": json.dumps({"table": "users"})}]),
                         Reply(content="done")])
            h = harness(openai_model(fake), tools)

            resolving: list[asyncio.Task[None]] = []

            async def on_required(e: Event) -> None:
                if decide is not None:  # resolve from elsewhere, as the HTTP endpoint does
                    resolving.append(asyncio.create_task(broker.resolve(1, e.data["pending_id"], decide)))

            h.bus.subscribe(BusEvent.TOOL_APPROVAL_REQUIRED, on_required)
            engine = h.engine()
            async def emit(t: str, d: dict[str, Any]) -> None:
                await h.bus.emit(BusEvent(t), d)

            engine.tool_ctx.emit = emit
            res = await engine.run("sys", [], "drop users", "drop users")
        return res, h.rec.events

    async def test_approved_call_runs(self, server: tuple[str, dict[str, Any]]) -> None:
        url, state = server
        before = state["deleted"]
        res, events = await self._run(url, ApprovalDecision(approved=True))
        assert state["deleted"] == before + 1
        kinds = [e.type for e in events]
        req = kinds.index(BusEvent.TOOL_APPROVAL_REQUIRED)
        assert kinds.index(BusEvent.TOOL_APPROVAL_RESOLVED) > req
        required = events[req].data
        assert required["mcp_tool_name"] == "delete-all"
        assert required["args"] == {"table": "users"}
        assert res.steps[0]["tool_calls"][0]["result"]["success"] is True

    async def test_rejected_call_does_not_run(self, server: tuple[str, dict[str, Any]]) -> None:
        url, state = server
        before = state["deleted"]
        res, events = await self._run(url, ApprovalDecision(approved=False, reason="not today"))
        assert state["deleted"] == before
        result = res.steps[0]["tool_calls"][0]["result"]
        assert result["success"] is False
        assert "not today" in result["error"]
        resolved = next(e for e in events if e.type == BusEvent.TOOL_APPROVAL_RESOLVED)
        assert resolved.data["approved"] is False

    async def test_no_answer_times_out_closed(self, server: tuple[str, dict[str, Any]]) -> None:
        url, state = server
        before = state["deleted"]
        res, events = await self._run(url, None, timeout=0.3)
        assert state["deleted"] == before
        assert "approval timeout" in res.steps[0]["tool_calls"][0]["result"]["error"]
        resolved = next(e for e in events if e.type == BusEvent.TOOL_APPROVAL_RESOLVED)
        assert resolved.data["timed_out"] is True
