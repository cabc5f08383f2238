"""The contract suite, answers: every WeKnora type Knora returns has, on every endpoint that returns it, the
field names and JSON types WeKnora's Go types give it (``tests.api.contract.weknora_types``).

One seeded world per test (a knowledge base with a manual entry and an uploaded file, a tag, a model row, a
custom agent, a session with a quick-answer turn and a smart-reasoning turn that calls a tool, all through the
API with the fake model server behind the real OpenAI client), then each endpoint's answer is checked whole:
the test fails with every problem listed, as Go's ``encoding/json`` or WeKnora's web UI would meet it.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.api.contract import weknora_types as T
from tests.api.contract.go import BOOL, INT, Kind, Slice, Struct, problems
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration

# Fields Knora knowingly leaves out, each with its reason. Empty means every field WeKnora always writes is
# written by Knora too; an entry here must say why a WeKnora client does not need it.
NOT_SERVED = frozenset({
    # WeKnora's integer alias of a chunk's or tag's UUID, for its FAQ and tag APIs that take numbers. Knora
    # addresses both by UUID on every route; a made-up number would be an id that no route accepts.
    "Chunk.seq_id", "KnowledgeTag.seq_id",
})

NOTE = "Oolong tea is partially oxidised before it is rolled. Green tea is not oxidised at all."
UPLOAD = b"# Brewing\n\nBrew oolong at 90 degrees for three minutes.\n\nGreen tea wants 80 degrees.\n"


@dataclass
class World:
    http: httpx.AsyncClient
    kb: str
    manual: str
    upload: str
    tag: str
    session: str
    model: str
    agent: str
    quick_frames: list[dict[str, Any]]
    agent_frames: list[dict[str, Any]]


def _check(body: Any, kind: Kind, where: str) -> list[str]:
    return [f"{where} {p}" for p in problems(body, kind, "$", NOT_SERVED)]


def _envelope(r: httpx.Response, kind: Kind, where: str, *, list_meta: bool = False) -> list[str]:
    """``{"success": true, "data": <kind>}`` (with ``total``/``page``/``page_size`` integers on lists that
    WeKnora pages)."""
    if r.status_code not in (200, 201):
        return [f"{where}: HTTP {r.status_code} {r.text[:200]}"]
    body = r.json()
    fields = {"success": T.F(BOOL), "data": T.F(kind)}
    if list_meta:
        fields |= {"total": T.F(INT), "page": T.F(INT), "page_size": T.F(INT)}
    return _check(body, Struct("Envelope", fields), where)


def _agent_reply(body: dict[str, Any]) -> Reply:
    if not body.get("tools"):
        return Reply(content="Tea")  # a session title, or the quick answer's own model call
    tool_results = [m["content"] for m in body.get("messages", []) if m["role"] == "tool"]
    if not tool_results:
        return Reply(content="Let me look.", tool_calls=[
            {"name": "knowledge_search", "arguments": json.dumps({"queries": ["oolong oxidised"]})}])
    handle = re.search(r'<chunk id="(c\d+)"', tool_results[-1])
    return Reply(content=f'Oolong is partly oxidised <ref id="{handle.group(1) if handle else "c1"}"/>.')


@pytest.fixture
async def world(make_settings: Callable[..., Settings], fake: FakeModelServer) -> AsyncIterator[World]:
    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="x")) as c, client_for(c) as http:
        await c.jobs.start()
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Tea"})).json()["data"]["id"]
        manual = (await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={
            "title": "Oxidation", "content": NOTE, "status": "publish"})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": ("brewing.md", UPLOAD, "text/markdown")},
                            data={"enable_multimodel": "false", "metadata": json.dumps({"team": "tea"})})
        assert r.status_code == 200, r.text
        upload = r.json()["data"]["id"]
        await c.jobs.wait_idle(60)
        tag = (await http.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "green"})).json()
        model = (await http.post("/api/v1/models", json={
            "name": "fake-chat", "type": "KnowledgeQA", "source": "remote",
            "parameters": {"base_url": fake.base_url, "api_key": "k"}})).json()["data"]["id"]
        agent = (await http.post("/api/v1/agents", json={
            "name": "Tea expert", "config": {"agent_mode": "smart-reasoning", "knowledge_bases": [kb]}})
                 ).json()["data"]["id"]
        sid = (await http.post("/api/v1/sessions", json={"title": "tea"})).json()["data"]["id"]
        fake.handler = _agent_reply
        quick = await http.post(f"/api/v1/knowledge-chat/{sid}", json={
            "query": "Is oolong oxidised?", "knowledge_base_ids": [kb]})
        assert quick.status_code == 200, quick.text
        smart = await http.post(f"/api/v1/agent-chat/{sid}", json={
            "query": "How is oolong made?", "agent_enabled": True, "agent_id": "builtin-smart-reasoning",
            "knowledge_base_ids": [kb]})
        assert smart.status_code == 200, smart.text
        await c.chat_service.wait_idle()
        yield World(http, kb, manual, upload, tag["data"]["id"], sid, model, agent,
                    parse_sse(quick.content).frames, parse_sse(smart.content).frames)


async def test_knowledge_bases(world: World) -> None:
    h, kb = world.http, world.kb
    found = _envelope(await h.get(f"/api/v1/knowledge-bases/{kb}"), T.KNOWLEDGE_BASE,
                      "GET /knowledge-bases/:id")
    found += _envelope(await h.get("/api/v1/knowledge-bases"), Slice(T.KNOWLEDGE_BASE),
                       "GET /knowledge-bases")
    found += _envelope(await h.post("/api/v1/knowledge-bases", json={"name": "Second"}), T.KNOWLEDGE_BASE,
                       "POST /knowledge-bases")
    found += _envelope(await h.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "Tea & more"}),
                       T.KNOWLEDGE_BASE, "PUT /knowledge-bases/:id")
    assert not found, "\n".join(found)


async def test_knowledge(world: World) -> None:
    h = world.http
    found: list[str] = []
    for kid in (world.manual, world.upload):
        found += _envelope(await h.get(f"/api/v1/knowledge/{kid}"), T.KNOWLEDGE, "GET /knowledge/:id")
    found += _envelope(await h.get(f"/api/v1/knowledge-bases/{world.kb}/knowledge"), Slice(T.KNOWLEDGE),
                       "GET /knowledge-bases/:id/knowledge", list_meta=True)
    found += _envelope(await h.get("/api/v1/knowledge/batch", params=[("ids", world.manual),
                                                                    ("ids", world.upload)]),
                       Slice(T.KNOWLEDGE), "GET /knowledge/batch")
    found += _envelope(await h.post(f"/api/v1/knowledge-bases/{world.kb}/knowledge/manual", json={
        "title": "Black tea", "content": "Black tea is fully oxidised."}), T.KNOWLEDGE,
        "POST /knowledge-bases/:id/knowledge/manual")
    assert not found, "\n".join(found)


async def test_chunks(world: World) -> None:
    h = world.http
    found: list[str] = []
    r = await h.get(f"/api/v1/chunks/{world.upload}")
    found += _envelope(r, Slice(T.CHUNK), "GET /chunks/:kid", list_meta=True)
    chunk = r.json()["data"][0]["id"]
    found += _envelope(await h.get(f"/api/v1/chunks/{world.upload}/{chunk}"), T.CHUNK, "GET /chunks/:kid/:id")
    found += _envelope(await h.get(f"/api/v1/chunks/by-id/{chunk}"), T.CHUNK, "GET /chunks/by-id/:id")
    found += _envelope(await h.put(f"/api/v1/chunks/{world.upload}/{chunk}", json={
        "content": "Brew oolong at 90 degrees for three minutes, twice."}), T.CHUNK, "PUT /chunks/:kid/:id")
    assert not found, "\n".join(found)


async def test_search_results(world: World) -> None:
    h = world.http
    found = _envelope(await h.post("/api/v1/knowledge-search", json={
        "query": "oolong", "knowledge_base_id": world.kb}), Slice(T.SEARCH_RESULT), "POST /knowledge-search")
    found += _envelope(await h.request("GET", f"/api/v1/knowledge-bases/{world.kb}/hybrid-search", json={
        "query_text": "oolong", "match_count": 5}), Slice(T.SEARCH_RESULT),
        "GET /knowledge-bases/:id/hybrid-search")
    assert not found, "\n".join(found)


async def test_stream_frames(world: World) -> None:
    found: list[str] = []
    for name, frames in (("knowledge-chat", world.quick_frames), ("agent-chat", world.agent_frames)):
        assert frames
        for i, frame in enumerate(frames):
            found += _check(frame, T.STREAM_RESPONSE, f"{name} frame {i} ({frame.get('response_type')})")
    kinds = {f["response_type"] for f in world.agent_frames}
    assert {"tool_call", "tool_result", "references", "answer", "complete"} <= kinds, kinds
    assert not found, "\n".join(found)


async def test_sessions_and_messages(world: World) -> None:
    h, sid = world.http, world.session
    found = _envelope(await h.get(f"/api/v1/sessions/{sid}"), T.SESSION, "GET /sessions/:id")
    found += _envelope(await h.get("/api/v1/sessions"), Slice(T.SESSION), "GET /sessions", list_meta=True)
    found += _envelope(await h.post("/api/v1/sessions", json={"title": "again"}), T.SESSION, "POST /sessions")
    found += _envelope(await h.put(f"/api/v1/sessions/{sid}", json={"title": "renamed"}), T.SESSION,
                       "PUT /sessions/:id")
    r = await h.get(f"/api/v1/messages/{sid}/load", params={"limit": 20})
    found += _envelope(r, Slice(T.MESSAGE), "GET /messages/:sid/load")
    messages = r.json()["data"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    # the agent turn's steps hold the tool call, whose args and result the contract checks too
    assert any(s["tool_calls"] for s in messages[-1]["agent_steps"])
    assert messages[-1]["knowledge_references"]
    assert not found, "\n".join(found)


async def test_models(world: World) -> None:
    h = world.http
    found = _envelope(await h.get("/api/v1/models"), Slice(T.MODEL), "GET /models")
    found += _envelope(await h.get(f"/api/v1/models/{world.model}"), T.MODEL, "GET /models/:id")
    found += _envelope(await h.get("/api/v1/models/builtin-chat"), T.MODEL, "GET /models/builtin-chat")
    found += _envelope(await h.put(f"/api/v1/models/{world.model}", json={"display_name": "Fake"}), T.MODEL,
                       "PUT /models/:id")
    assert not found, "\n".join(found)


async def test_agents(world: World) -> None:
    h = world.http
    found = _envelope(await h.get("/api/v1/agents"), Slice(T.AGENT), "GET /agents")
    found += _envelope(await h.get(f"/api/v1/agents/{world.agent}"), T.AGENT, "GET /agents/:id")
    found += _envelope(await h.get("/api/v1/agents/builtin-smart-reasoning"), T.AGENT,
                       "GET /agents/builtin-smart-reasoning")
    found += _envelope(await h.post(f"/api/v1/agents/{world.agent}/copy"), T.AGENT, "POST /agents/:id/copy")
    found += _envelope(await h.put(f"/api/v1/agents/{world.agent}", json={"name": "Tea master"}), T.AGENT,
                       "PUT /agents/:id")
    assert not found, "\n".join(found)


async def test_tags(world: World) -> None:
    h = world.http
    found = _envelope(await h.put(f"/api/v1/knowledge-bases/{world.kb}/tags/{world.tag}",
                                  json={"name": "green tea"}), T.TAG, "PUT /knowledge-bases/:id/tags/:tid")
    r = await h.get(f"/api/v1/knowledge-bases/{world.kb}/tags")
    body = r.json()["data"]
    items = body["data"] if isinstance(body, dict) else body  # WeKnora pages tags: {data, total, …}
    found += _check(items, Slice(T.TAG), "GET /knowledge-bases/:id/tags")
    assert not found, "\n".join(found)


async def test_knowledge_page_views(world: World) -> None:
    h = world.http
    found = _envelope(await h.get(f"/api/v1/knowledge/{world.upload}/spans"), T.KNOWLEDGE_PROCESSING_TRACE,
                      "GET /knowledge/:id/spans")
    found += _envelope(await h.get(f"/api/v1/knowledge-bases/{world.kb}/knowledge/folders"),
                       T.KNOWLEDGE_FOLDER_TREE, "GET /knowledge-bases/:id/knowledge/folders")
    assert not found, "\n".join(found)


async def test_message_search(world: World) -> None:
    r = await world.http.post("/api/v1/messages/search", json={"query": "oolong", "mode": "", "limit": 0,
                                                               "session_ids": None})
    found = _envelope(r, T.MESSAGE_SEARCH_RESULT, "POST /messages/search")
    assert not found, "\n".join(found)
    assert r.json()["data"]["items"], "the seeded turns mention oolong"
