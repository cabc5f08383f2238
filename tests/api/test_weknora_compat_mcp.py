"""Client-compatibility audit, part 2: the flows of WeKnora's Python MCP server (api §3, §6(b)).

The MCP server sends ``X-API-Key``, passes ids through only when they look like UUIDs (anything else is a
*name*, resolved through ``GET /knowledge-bases`` then ``GET /shared-knowledge-bases``), calls
``raise_for_status()`` and returns the JSON verbatim; its chat tool reads ``data:`` lines and aborts on any
``error`` frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.api.test_weknora_compat import assert_int, assert_rfc3339, assert_uuid
from tests.conftest import client_for
from tests.fakes import FakeModelServer, Reply

pytestmark = pytest.mark.integration

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)

TEA = ("Oolong tea is partially oxidised before it is rolled and dried. Green tea is not oxidised at all, "
       "while black tea is fully oxidised. Oolong comes mainly from Fujian and Taiwan.")
SOLAR = ("A typical residential solar panel produces about 400 watts at peak sun. Output drops on cloudy "
         "days and panels slowly degrade, losing about half a percent of output per year.")


async def _started(c: Any) -> Any:
    if not c.jobs.started:
        await c.jobs.start()
    return c


@pytest.fixture
async def mcp(sqlite_container: Any) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    await _started(sqlite_container)
    async with client_for(sqlite_container) as http:
        yield sqlite_container, http


async def resolve_kb(http: httpx.AsyncClient, id_or_name: str) -> str:
    """The MCP server's ``_resolve_kb``: a UUID passes through; else match a name in own, then shared KBs."""
    if UUID_RE.match(id_or_name):
        return id_or_name
    own = await http.get("/api/v1/knowledge-bases")
    own.raise_for_status()
    for kb in own.json()["data"]:
        if kb["name"] == id_or_name:
            return str(kb["id"])
    shared = await http.get("/api/v1/shared-knowledge-bases")
    shared.raise_for_status()
    for item in shared.json()["data"]:
        if item["knowledge_base"]["name"] == id_or_name:
            return str(item["knowledge_base"]["id"])
    raise LookupError(id_or_name)


async def mcp_chat(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The MCP chat tool: stream, keep ``data:`` lines, accumulate answers and references, stop at
    complete."""
    answer = ""
    refs: list[dict[str, Any]] = []
    types: list[str] = []
    async with http.stream("POST", path, json=body, headers={"Accept": "text/event-stream"}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            frame = json.loads(line[5:].lstrip())
            types.append(frame["response_type"])
            if frame["response_type"] == "error":
                raise RuntimeError(frame["content"])
            if frame["response_type"] == "answer":
                answer += frame["content"]
            if frame["response_type"] == "references":
                refs = frame.get("knowledge_references") or []
            if frame["response_type"] == "complete":
                break
    return {"answer": answer, "references": refs, "types": types}


def _kb_fields(kb: dict[str, Any]) -> None:
    for key in ("id", "name", "description", "tenant_id", "created_at", "updated_at"):
        assert key in kb, key
    assert_uuid(kb["id"])
    assert_int(kb["tenant_id"])
    assert_rfc3339(kb["created_at"], nullable=False)
    assert_rfc3339(kb["updated_at"])


def _search_result_fields(r: dict[str, Any]) -> None:
    for key in ("id", "content", "knowledge_id", "chunk_index", "knowledge_title", "start_at", "end_at",
                "seq",
                "score", "match_type", "sub_chunk_id", "metadata", "chunk_type", "parent_chunk_id",
                "image_info",
                "knowledge_filename", "knowledge_source"):
        assert key in r, key
    assert_uuid(r["id"])
    assert_uuid(r["knowledge_id"])
    assert_int(r["match_type"])
    assert_int(r["chunk_index"])
    assert isinstance(r["score"], (int, float))
    assert isinstance(r["sub_chunk_id"], list)
    assert isinstance(r["metadata"], dict)
    assert isinstance(r["image_info"], str)


async def _kb_with_docs(c: Any, http: httpx.AsyncClient, name: str) -> str:
    r = await http.post("/api/v1/knowledge-bases", json={"name": name, "description": "mcp"})
    assert r.status_code == 201, r.text
    kb = r.json()["data"]["id"]
    for title, text in (("Tea culture", TEA), ("Solar power", SOLAR)):
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                            json={"title": title, "content": text, "status": "publish", "tag_ids": []})
        assert r.status_code == 200, r.text
    await c.jobs.wait_idle(60)
    return str(kb)


class TestKnowledgeBaseTools:
    async def test_create_by_name_then_resolve_get_and_delete(self, mcp: tuple[Any,
                                                                               httpx.AsyncClient]) -> None:
        _c, http = mcp
        r = await http.post("/api/v1/knowledge-bases", json={"name": "Field notes", "description": "d"})
        assert r.status_code == 201
        body = r.json()
        assert body["success"] is True
        _kb_fields(body["data"])
        kb_id = await resolve_kb(http, "Field notes")
        assert kb_id == body["data"]["id"]
        assert await resolve_kb(http, kb_id) == kb_id
        with pytest.raises(LookupError):
            await resolve_kb(http, "kb-1")  # not a UUID, no such name: the shared list must exist and be []
        listed = (await http.get("/api/v1/knowledge-bases")).json()["data"]
        assert listed[0]["knowledge_count"] == 0
        assert listed[0]["chunk_count"] == 0
        for kb in listed:
            _kb_fields(kb)
        got = await http.get(f"/api/v1/knowledge-bases/{kb_id}")
        assert got.status_code == 200
        _kb_fields(got.json()["data"])
        deleted = await http.delete(f"/api/v1/knowledge-bases/{kb_id}")
        assert deleted.status_code == 200
        assert deleted.json() == {"success": True, "message": "Knowledge base deleted successfully"}
        missing = await http.get(f"/api/v1/knowledge-bases/{kb_id}")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == 1003

    async def test_documents_list_get_chunks_and_deletes(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = mcp
        kb = await _kb_with_docs(c, http, "Docs")
        r = await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"page": 1, "page_size": 1})
        assert r.status_code == 200
        body = r.json()
        assert body["total"] == 2
        assert body["page"] == 1
        assert body["page_size"] == 1
        assert len(body["data"]) == 1
        k = body["data"][0]
        for key in ("id", "tenant_id", "knowledge_base_id", "type", "title", "parse_status", "enable_status",
                    "file_type", "created_at", "updated_at", "processed_at"):
            assert key in k, key
        assert k["type"] == "manual"
        assert k["parse_status"] == "completed"
        assert k["knowledge_base_id"] == kb
        assert_int(k["tenant_id"])
        assert_rfc3339(k["created_at"], nullable=False)
        assert_rfc3339(k["processed_at"])
        got = await http.get(f"/api/v1/knowledge/{k['id']}")
        assert got.status_code == 200
        assert got.json()["data"]["id"] == k["id"]
        chunks = await http.get(f"/api/v1/chunks/{k['id']}", params={"page": 1, "page_size": 10})
        assert chunks.status_code == 200
        cb = chunks.json()
        assert cb["total"] >= 1
        assert cb["page"] == 1
        assert cb["page_size"] == 10
        chunk = cb["data"][0]
        assert_uuid(chunk["id"])
        assert chunk["knowledge_id"] == k["id"]
        r = await http.delete(f"/api/v1/chunks/{k['id']}/{chunk['id']}")
        assert r.status_code == 200
        assert r.json()["success"] is True
        r = await http.delete(f"/api/v1/knowledge/{k['id']}")
        assert r.status_code == 200
        assert r.json()["success"] is True
        assert (await http.get(f"/api/v1/knowledge/{k['id']}")).status_code == 404

    async def test_hybrid_search(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = mcp
        kb = await _kb_with_docs(c, http, "Search me")
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search",
                            json={"query_text": "How is oolong tea processed?", "vector_threshold": 0.0,
                                  "keyword_threshold": 0.0, "match_count": 5})
        assert r.status_code == 200, r.text
        results = r.json()["data"]
        assert isinstance(results, list)
        assert results
        for res in results:
            _search_result_fields(res)
        assert results[0]["knowledge_title"] == "Tea culture"
        # The MCP server's tool builds the same request with GET and a JSON body, which WeKnora accepts.
        g = await http.request("GET", f"/api/v1/knowledge-bases/{kb}/hybrid-search",
                               json={"query_text": "solar panel watts", "match_count": 5})
        assert g.status_code == 200
        assert g.json()["data"][0]["knowledge_title"] == "Solar power"

    async def test_models_list_and_get(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        _c, http = mcp
        r = await http.post("/api/v1/models", json={
            "name": "qwen-chat", "type": "KnowledgeQA", "source": "remote", "description": "",
            "parameters": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-top-secret"}})
        assert r.status_code == 201, r.text
        m = r.json()["data"]
        assert_uuid(m["id"])
        models = (await http.get("/api/v1/models")).json()["data"]
        assert m["id"] in {x["id"] for x in models}
        got = await http.get(f"/api/v1/models/{m['id']}")
        assert got.status_code == 200
        assert got.json()["data"]["name"] == "qwen-chat"
        assert "sk-top-secret" not in got.text
        assert "sk-top-secret" not in r.text

    async def test_agents_expose_kb_selection(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        _c, http = mcp
        agents = (await http.get("/api/v1/agents")).json()["data"]
        for a in agents:
            got = await http.get(f"/api/v1/agents/{a['id']}")
            assert got.status_code == 200
            cfg = got.json()["data"]["config"]
            assert cfg["kb_selection_mode"] in ("all", "selected", "none")
            assert isinstance(cfg.get("knowledge_bases", []), list)


class TestChatTools:
    async def test_session_then_knowledge_chat(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = mcp
        kb = await _kb_with_docs(c, http, "Chat KB")
        # The MCP server's create_session sends fields WeKnora ignores.
        r = await http.post("/api/v1/sessions", json={
            "title": "mcp", "description": "", "knowledge_base_id": kb,
            "session_strategy": {"max_rounds": 5, "enable_rewrite": True, "fallback_strategy": "fixed_answer",
                                 "fallback_response": "sorry", "keyword_threshold": 0.5,
                                 "vector_threshold": 0.7,
                                 "embedding_top_k": 10, "rerank_top_k": 5}})
        assert r.status_code == 201, r.text
        sid = r.json()["data"]["id"]
        assert (await http.get(f"/api/v1/sessions/{sid}")).json()["data"]["id"] == sid
        out = await mcp_chat(http, f"/api/v1/knowledge-chat/{sid}",
                             {"query": "How is oolong tea processed?", "knowledge_base_ids": [kb]})
        assert out["types"][0] == "agent_query"
        assert out["types"][-1] == "complete"
        assert "partially oxidised" in out["answer"]
        assert out["references"]
        assert all(ref["knowledge_id"] for ref in out["references"])
        for ref in out["references"]:
            _search_result_fields(ref)
        listed = (await http.get("/api/v1/sessions", params={"page": 1, "page_size": 10})).json()
        assert sid in {s["id"] for s in listed["data"]}
        r = await http.delete(f"/api/v1/sessions/{sid}")
        assert r.status_code == 200

    async def test_agent_chat_with_a_builtin_agent_id(self, mcp: tuple[Any, httpx.AsyncClient]) -> None:
        c, http = mcp
        kb = await _kb_with_docs(c, http, "Agent KB")
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        out = await mcp_chat(http, f"/api/v1/agent-chat/{sid}",
                             {"query": "How much power does a solar panel produce?",
                              "knowledge_base_ids": [kb],
                              "agent_enabled": True, "agent_id": "builtin-quick-answer"})
        assert out["types"][0] == "agent_query"
        assert out["types"][-1] == "complete"
        assert "400 watts" in out["answer"]



@pytest.fixture
async def mcp_model(make_settings: Callable[..., Settings],
                    fake: FakeModelServer) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    from tests.conftest import started

    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="k")) as c:
        await _started(c)
        async with client_for(c) as http:
            yield c, http


async def test_plain_chat_through_a_model_streams_answer_deltas(mcp_model: tuple[Any, httpx.AsyncClient],
                                                                fake: FakeModelServer) -> None:
    _c, http = mcp_model
    fake.script([Reply(content="Hello from the model, friend.", chunk_size=4)])
    sid = (await http.post("/api/v1/sessions", json={"title": "plain"})).json()["data"]["id"]
    out = await mcp_chat(http, f"/api/v1/knowledge-chat/{sid}", {"query": "Say hello"})
    assert out["answer"] == "Hello from the model, friend."
    assert out["types"].count("answer") > 2
    assert out["types"][-1] == "complete"
    assert fake.requests
    assert fake.requests[-1]["stream"] is True
