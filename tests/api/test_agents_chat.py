"""Smart reasoning end to end: /agent-chat → agent engine → real retrieval and a real MCP server → SSE + saved
message, with the fake model server behind the real openai client."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.adapters.mcp.server import mcp_server
from tests.conftest import client_for
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration



@pytest.fixture
async def app(make_settings: Callable[..., Settings],
              fake: FakeModelServer) -> AsyncIterator[tuple[Any, Any]]:
    from tests.conftest import started

    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="x")) as c, client_for(c) as http:
        yield c, http


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body.get("messages", []) if m["role"] == "tool"]


async def kb_with_document(http: httpx.AsyncClient) -> str:
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": "HR"})).json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={
        "title": "Leave policy", "status": "publish",
        "content": "Annual leave is 20 days per year.\n\nParking is free on weekends."})
    kid = r.json()["data"]["id"]
    for _ in range(200):
        status = (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]["parse_status"]
        if status in ("completed", "failed"):
            break
        await asyncio.sleep(0.05)
    assert status == "completed"
    return str(kb)


async def test_agent_chat_searches_the_kb_and_cites(app: tuple[Any, Any], fake: FakeModelServer) -> None:
    c, http = app
    kb = await kb_with_document(http)

    def reply(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(content="Leave")  # the session title
        results = tool_messages(body)
        if not results:
            return Reply(content="Let me check the handbook.", tool_calls=[
                {"name": "knowledge_search", "arguments": json.dumps({"queries": ["annual leave days"]})}])
        handle = re.search(r'<chunk id="(c\d+)"', results[-1])
        assert handle, results[-1]
        return Reply(content=f'Annual leave is 20 days <ref id="{handle.group(1)}"/>.', chunk_size=5)

    fake.handler = reply
    sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
    r = await http.post(f"/api/v1/agent-chat/{sid}", json={
        "query": "How many days of annual leave?", "agent_enabled": True,
                                                           "agent_id": "builtin-smart-reasoning",
        "knowledge_base_ids": [kb]})
    assert r.status_code == 200
    s = parse_sse(r.content)
    assert s.types[0] == "agent_query"
    assert "complete" in s.types
    assert s.types.index("tool_call") < s.types.index("tool_result")
    result = s.of("tool_result")[0]
    assert result["data"]["tool_name"] == "knowledge_search"
    assert result["data"]["success"] is True
    assert result["content"].startswith("检索到 ")  # the tool card's summary
    refs = s.of("references")
    assert refs
    assert refs[-1]["knowledge_references"][0]["knowledge_base_id"] == kb
    await c.chat_service.wait_idle()
    msgs = (await http.get(f"/api/v1/messages/{sid}/load")).json()["data"]
    bot = msgs[-1]
    assert bot["is_completed"]
    assert "Let me check" not in bot["content"]
    assert bot["content"].startswith("Annual leave is 20 days <kb ")
    chunk_id = refs[-1]["knowledge_references"][0]["id"]
    assert chunk_id in bot["content"]
    steps = bot["agent_steps"]
    assert steps[0]["thought"] == "Let me check the handbook."
    assert steps[0]["tool_calls"][0]["name"] == "knowledge_search"
    # the model never saw the chunk's or the KB's internal ids, only handles
    agent_requests = [b for b in fake.chat_requests if b.get("tools")]
    assert all(chunk_id not in json.dumps(b["messages"]) for b in agent_requests)
    assert all(kb not in json.dumps(b["messages"]) for b in agent_requests)
    assert sorted(t["function"]["name"] for t in agent_requests[0]["tools"]) == [
        "get_document_info", "grep_chunks", "knowledge_search", "list_knowledge_chunks",
                                                                                 "query_knowledge_graph"]


async def test_mcp_approval_over_http(app: tuple[Any, Any], fake: FakeModelServer) -> None:
    c, http = app
    with mcp_server() as (url, state):
        sid_svc = (await http.post("/api/v1/mcp-services", json={
            "name": "Ops", "transport_type": "http-streamable", "url": url})).json()["data"]["id"]
        await http.put(f"/api/v1/mcp-services/{sid_svc}/tool-approvals/delete-all",
                       json={"require_approval": True})
        agent = (await http.post("/api/v1/agents", json={"name": "Ops agent", "config": {
            "agent_mode": "smart-reasoning", "mcp_selection_mode": "all",
            "allowed_tools": ["thinking"]}})).json()
        aid = agent["data"]["id"]

        def reply(body: dict[str, Any]) -> Reply:
            if not body.get("tools"):
                return Reply(content="Ops")
            if not tool_messages(body):
                return Reply(tool_calls=[{"name": "mcp_ops_delete_all",
                                          "arguments": json.dumps({"table": "tmp"})}])
            return Reply(content="Done: " + tool_messages(body)[-1].splitlines()[-1])

        fake.handler = reply
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        chat = asyncio.create_task(http.post(f"/api/v1/agent-chat/{sid}", json={
            "query": "clean tmp", "agent_enabled": True, "agent_id": aid}))
        pending: list[dict[str, Any]] = []
        for _ in range(400):
            pending = c.approvals.pending(c.default_tenant_id)
            if pending:
                break
            await asyncio.sleep(0.025)
        assert pending, "no approval was requested"
        assert state["deleted"] == 0  # nothing runs before the human says yes
        r = await http.post(f"/api/v1/agent/tool-approvals/{pending[0]['pending_id']}",
                            json={"approved": True, "reason": "ok"})
        assert r.status_code == 200
        s = parse_sse((await chat).content)
    assert state["deleted"] == 1
    assert s.types.index("tool_approval_required") < s.types.index("tool_approval_resolved")
    assert s.of("tool_approval_required")[0]["data"]["pending_id"] == pending[0]["pending_id"]
    assert s.answer() == "Done: deleted tmp"
    # capability filtering: no knowledge scope → no KB tools; MCP tools join the chosen "thinking"
    offered = next(b for b in fake.chat_requests if b.get("tools"))["tools"]
    tools = sorted(t["function"]["name"] for t in offered)
    assert tools == ["mcp_ops_add", "mcp_ops_delete_all", "mcp_ops_explode", "thinking"]


async def test_smart_reasoning_without_any_model_key_says_it_needs_one(sqlite_client: httpx.AsyncClient,
                                                                       sqlite_container: Any) -> None:
    """No chat model configured: the agent cannot plan or call tools with the extractive answerer, so the turn
    answers (an answer frame, as the engine's) that smart reasoning needs a chat model and offers quick answer
    — it does not quote sentences as if the agent had reasoned. Quick answer on the same session still
    quotes the document."""
    kb = await kb_with_document(sqlite_client)
    sid = (await sqlite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
    r = await sqlite_client.post(f"/api/v1/agent-chat/{sid}", json={
        "query": "How many days of annual leave?", "agent_enabled": True,
        "agent_id": "builtin-smart-reasoning", "knowledge_base_ids": [kb]})
    assert r.status_code == 200
    s = parse_sse(r.content)
    assert not s.of("tool_call")
    assert not s.of("error")
    answer = s.answer()
    assert answer.startswith("Smart reasoning needs a chat model")
    assert "Quick answer" in answer
    assert "KNORA_CHAT_MODEL" in answer
    assert "Annual leave is 20 days" not in answer
    frames = s.of("answer")
    assert frames[-1]["done"] is True
    assert not any(f.get("data", {}).get("is_fallback") for f in frames)  # not "no matching content"
    assert all(not f["done"] for f in frames[:-1])
    assert "complete" in s.types
    await sqlite_container.chat_service.wait_idle()
    bot = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"][-1]
    assert bot["content"] == answer
    assert bot["is_fallback"] is False
    assert bot["is_completed"]

    r = await sqlite_client.post(f"/api/v1/agent-chat/{sid}", json={
        "query": "我可以休几天年假？", "agent_enabled": True, "agent_id": "builtin-smart-reasoning",
        "knowledge_base_ids": [kb]})
    assert parse_sse(r.content).answer().startswith("智能推理需要对话模型")

    r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", json={
        "query": "How many days of annual leave?", "knowledge_base_ids": [kb]})
    assert "Annual leave is 20 days per year." in parse_sse(r.content).answer()
