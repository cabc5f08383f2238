"""``/mcp`` (Streamable HTTP) through the official SDK client against a real uvicorn server: the tools, the
document resource, authentication and tenant isolation, bad arguments, and the app's limits."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent, TextResourceContents
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from knora.domain.access import Role
from knora.root import Services
from knora.settings import Settings
from tests.api.mcp_server.seed import Seeded, error_text, payload, seed
from tests.conftest import TEST_API_KEY, client_for, started
from tests.fakes.web_site import Page, serve
from tests.polling import eventually
from tests.services.streaming.live import live_client

pytestmark = pytest.mark.integration

TOOLS = {"list_knowledge_bases", "search_knowledge", "ask", "list_documents", "read_document", "add_document"}


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[tuple[Services, Seeded, str]]:
    async with started(settings) as c:
        data = await seed(c)
        async with live_client(c) as http:
            yield c, data, str(http.base_url).rstrip("/") + "/mcp"


@pytest.fixture
async def knora(make_settings: Callable[..., Settings]) -> AsyncIterator[tuple[Services, Seeded, str]]:
    async with served(make_settings()) as running:
        yield running


@asynccontextmanager
async def mcp_client(url: str, key: str | None = TEST_API_KEY, *, bearer: bool = False,
                     mode: Literal["auto", "legacy"] = "auto") -> AsyncIterator[Client]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"} if bearer else {"X-API-Key": key}
    async with (httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        yield client


class TestTools:
    async def test_tools_are_listed_with_descriptions_and_schemas(self, knora: Any) -> None:
        _c, _data, url = knora
        async with mcp_client(url) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            templates = (await client.list_resource_templates()).resource_templates
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert len(tool.description or "") > 80, tool.name  # says when to use it and what it returns
            assert tool.output_schema is not None, tool.name
        search = tools["search_knowledge"].input_schema
        assert search["required"] == ["query"]
        assert search["properties"]["top_k"]["maximum"] == 50
        assert "names or ids" in json.dumps(search["properties"]["knowledge_bases"])
        assert "ctx" not in search["properties"]
        assert set(tools["add_document"].input_schema["required"]) == {"knowledge_base"}
        assert tools["search_knowledge"].annotations is not None
        assert tools["search_knowledge"].annotations.read_only_hint is True
        assert [t.uri_template for t in templates] == ["knora://knowledge/{knowledge_id}"]

    async def test_knowledge_bases_and_documents(self, knora: Any) -> None:
        _c, data, url = knora
        async with mcp_client(url) as client:
            kbs = payload(await client.call_tool("list_knowledge_bases", {}))["knowledge_bases"]
            by_name = payload(await client.call_tool("list_documents", {"knowledge_base": "handbook"}))
            by_id = payload(await client.call_tool("list_documents", {"knowledge_base": data.kb_id,
                                                                      "keyword": "solar"}))
        assert [(k["id"], k["name"], k["document_count"]) for k in kbs] == [(data.kb_id, "handbook", 2)]
        assert kbs[0]["chunk_count"] >= 2
        assert by_name["total"] == 2
        assert {d["id"] for d in by_name["documents"]} == {data.tea_id, data.solar_id}
        assert {d["parse_status"] for d in by_name["documents"]} == {"completed"}
        assert [d["id"] for d in by_id["documents"]] == [data.solar_id]

    async def test_search_returns_chunks_with_ids_titles_and_scores(self, knora: Any) -> None:
        _c, data, url = knora
        async with mcp_client(url, bearer=True) as client:  # the web UI's way of sending the key works too
            found = payload(await client.call_tool("search_knowledge", {"query": "oolong oxidised Fujian",
                                                                        "top_k": 3}))
        best = found["results"][0]
        assert best["document_id"] == data.tea_id
        assert best["document_title"] == "Tea"
        assert best["knowledge_base_id"] == data.kb_id
        assert best["chunk_id"]
        assert best["score"] > 0
        assert "Oolong" in best["content"]
        assert len(found["results"]) <= 3

    async def test_ask_answers_with_numbered_sources(self, knora: Any) -> None:
        c, data, url = knora
        async with mcp_client(url) as client:
            result = await client.call_tool("ask", {"question": "Where does oolong tea come from?",
                                                    "knowledge_bases": ["handbook"]})
        got = payload(result)
        assert "Fujian" in got["answer"]
        assert "[1]" in got["answer"]
        assert got["sources"][0]["number"] == 1
        assert got["sources"][0]["document_id"] == data.tea_id
        assert got["sources"][0]["title"] == "Tea"
        block = result.content[0]
        assert isinstance(block, TextContent)
        assert "Sources:\n[1] Tea" in block.text
        messages = await c.session_service.load_messages(c.default_tenant_id, got["session_id"])
        assert [m.role for m in messages] == ["user", "assistant"]  # the turn is in the UI's history

    async def test_read_document_pages_and_the_resource(self, knora: Any) -> None:
        _c, data, url = knora
        async with mcp_client(url) as client:
            page = payload(await client.call_tool("read_document", {"document_id": data.tea_id,
                                                                    "page_size": 1}))
            resource = await client.read_resource(f"knora://knowledge/{data.tea_id}")
        assert page["document"]["title"] == "Tea"
        assert page["total_chunks"] >= 1
        assert len(page["chunks"]) == 1
        assert page["has_more"] is (page["total_chunks"] > 1)
        content = resource.contents[0]
        assert isinstance(content, TextResourceContents)
        assert content.text.startswith("# Tea\n\n")
        assert content.text.count("Oolong tea is partially oxidised") == 1

    async def test_add_text_then_it_is_searchable(self, knora: Any) -> None:
        _c, _data, url = knora
        async with mcp_client(url) as client:
            added = payload(await client.call_tool("add_document", {
                "knowledge_base": "handbook", "text": "# Kumquats\n\nKumquats are eaten whole, peel too."}))
            doc = added["document"]
            assert doc["title"] == "Kumquats"
            assert doc["parse_status"] == "pending"

            async def indexed() -> bool:
                page = payload(await client.call_tool("read_document", {"document_id": doc["id"]}))
                return bool(page["document"]["parse_status"] == "completed")

            assert await eventually(indexed)
            found = payload(await client.call_tool("search_knowledge", {"query": "kumquat peel"}))
        assert found["results"][0]["document_id"] == doc["id"]


async def test_a_viewer_key_searches_but_adds_nothing(knora: Any) -> None:
    """Tools follow the caller's role as routes do (issue 14): a read-only key may search, not write."""
    c, _data, url = knora
    _key, viewer = await c.tenants.create_key(c.default_tenant_id, "reader", Role.VIEWER)
    async with mcp_client(url, viewer) as client:
        found = payload(await client.call_tool("search_knowledge", {"query": "tea"}))
        refused = await client.call_tool("add_document", {"knowledge_base": "handbook", "text": "# No\n\nno"})
    assert found["results"]
    assert refused.is_error
    assert "contributor" in error_text(refused)


async def test_add_url_goes_through_the_import_and_its_guard(make_settings: Callable[..., Settings]) -> None:
    page = Page(b"<html><head><title>Yuzu</title></head><body><p>Yuzu is a sour citrus fruit.</p></body>"
                b"</html>")
    with serve({"/yuzu": page}) as site:
        async with served(make_settings(allow_private_network_fetch=True)) as (c, data, url):
            async with mcp_client(url) as client:
                added = payload(await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                                        "url": f"{site}/yuzu"}))
                again = await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                                "url": f"{site}/yuzu"})
                bad = await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                              "url": "ftp://x/y"})
            assert "already exists" in error_text(again)
            assert "URL" in error_text(bad) or "url" in error_text(bad)
            doc = added["document"]
            assert doc["type"] == "url"
            assert doc["source"] == f"{site}/yuzu"

            async def settled() -> str:
                k = await c.ingest_service.get(c.default_tenant_id, doc["id"])
                return str(k.parse_status) if k.parse_status in ("completed", "failed") else ""

            assert await eventually(settled) == "completed"
    # the default: private addresses are refused
    async with served(make_settings()) as (_c, _data, url), mcp_client(url) as client:
        refused = await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                          "url": "http://127.0.0.1:9/page"})
    assert "Error executing tool add_document" in error_text(refused)
    assert "127.0.0.1 is not a public address" in error_text(refused)


class TestAuthAndTenants:
    async def test_no_key_or_a_wrong_key_is_refused(self, knora: Any) -> None:
        _c, _data, url = knora
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=30) as http:
            none = await http.post(url, json=init, headers=accept)
            wrong = await http.post(url, json=init, headers={**accept, "X-API-Key": "sk-wrong"})
            good = await http.post(url, json=init, headers={**accept, "X-API-Key": TEST_API_KEY})
        assert none.status_code == 401
        assert none.json() == {"success": False, "error": {"code": 1001,
                                                           "message": "Unauthorized: missing authentication"}}
        assert none.headers["www-authenticate"].startswith("Bearer")
        assert wrong.status_code == 401
        assert "invalid API key" in wrong.text
        assert good.status_code == 200, good.text
        with pytest.raises(ExceptionGroup) as refused:
            async with mcp_client(url, key=None) as client:
                await client.list_tools()
        assert refused.group_contains(MCPError, match="error response")

    @pytest.mark.parametrize("mode", ["auto", "legacy"])
    async def test_both_protocol_eras_act_as_the_key_s_tenant(self, knora: Any,
                                                             mode: Literal["auto", "legacy"]) -> None:
        """The 2026 per-request era (what ``auto`` negotiates) and the initialize handshake desktop clients
        still speak: each request is authenticated and acts as its key's tenant."""
        _c, data, url = knora
        async with mcp_client(url, key=data.other_key, mode=mode) as client:
            era = client.protocol_version
            kbs = payload(await client.call_tool("list_knowledge_bases", {}))["knowledge_bases"]
            foreign = await client.call_tool("read_document", {"document_id": data.tea_id})
        assert era in (MODERN_PROTOCOL_VERSIONS if mode == "auto" else HANDSHAKE_PROTOCOL_VERSIONS)
        assert [k["name"] for k in kbs] == ["private"]
        assert "not found" in error_text(foreign).lower()

    async def test_a_tenant_sees_only_its_own_knowledge(self, knora: Any) -> None:
        _c, data, url = knora
        async with mcp_client(url, key=data.other_key) as other:
            kbs = payload(await other.call_tool("list_knowledge_bases", {}))["knowledge_bases"]
            mine = payload(await other.call_tool("search_knowledge", {"query": "merger codename"}))
            foreign = [
                await other.call_tool("search_knowledge", {"query": "oolong",
                                                           "knowledge_bases": [data.kb_id]}),
                await other.call_tool("search_knowledge", {"query": "oolong",
                                                           "knowledge_bases": ["handbook"]}),
                await other.call_tool("ask", {"question": "oolong?", "knowledge_bases": [data.kb_id]}),
                await other.call_tool("list_documents", {"knowledge_base": data.kb_id}),
                await other.call_tool("read_document", {"document_id": data.tea_id}),
                await other.call_tool("add_document", {"knowledge_base": data.kb_id, "text": "intruder"}),
            ]
            with pytest.raises(MCPError) as resource:
                await other.read_resource(f"knora://knowledge/{data.tea_id}")
        async with mcp_client(url) as default:
            everything = payload(await default.call_tool("search_knowledge",
                                                         {"query": "secret merger Bluebird"}))
            secret = await default.call_tool("read_document", {"document_id": data.secret_id})
        assert [k["name"] for k in kbs] == ["private"]
        assert mine["results"][0]["document_id"] == data.secret_id
        for result in foreign:
            assert "not found" in error_text(result).lower()
            assert "Oolong" not in error_text(result)
        assert "not found" in str(resource.value).lower()
        assert data.secret_id not in {r["document_id"] for r in everything["results"]}
        assert "not found" in error_text(secret).lower()


class TestBadInput:
    async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(self, knora: Any) -> None:
        _c, data, url = knora
        async with mcp_client(url) as client:
            errors = {
                "missing query": await client.call_tool("search_knowledge", {}),
                "top_k too big": await client.call_tool("search_knowledge", {"query": "tea", "top_k": 1000}),
                "wrong type": await client.call_tool("read_document", {"document_id": data.tea_id,
                                                                       "page": "two"}),
                "unknown kb": await client.call_tool("list_documents", {"knowledge_base": "no-such-kb"}),
                "unknown doc": await client.call_tool("read_document", {"document_id": "nope"}),
                "both text and url": await client.call_tool("add_document", {
                    "knowledge_base": "handbook", "text": "x", "url": "https://example.org/"}),
                "neither": await client.call_tool("add_document", {"knowledge_base": "handbook"}),
                "empty text": await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                                      "text": " "}),
                "unknown session": await client.call_tool("ask", {"question": "tea?", "session_id": "nope"}),
                "unknown tool": await client.call_tool("drop_everything", {}),
            }
            with pytest.raises(MCPError):
                await client.read_resource("knora://knowledge/nope")
            still = payload(await client.call_tool("list_knowledge_bases", {}))
        texts = {name: error_text(result) for name, result in errors.items()}
        assert "query" in texts["missing query"]
        assert "top_k" in texts["top_k too big"]
        assert "page" in texts["wrong type"]
        assert "'no-such-kb' not found" in texts["unknown kb"]
        assert "Knowledge not found" in texts["unknown doc"]
        assert "exactly one of text or url" in texts["both text and url"]
        assert "exactly one of text or url" in texts["neither"]
        assert "empty" in texts["empty text"]
        assert "Session not found" in texts["unknown session"]
        assert "drop_everything" in texts["unknown tool"]
        assert len(still["knowledge_bases"]) == 1


class TestAppLimits:
    async def test_body_limit_applies(self, make_settings: Callable[..., Settings]) -> None:
        async with served(make_settings(max_chat_body_bytes=4096)) as (_c, _data, url):
            async with mcp_client(url) as client:
                ok = await client.call_tool("add_document", {"knowledge_base": "handbook",
                                                             "text": "small note"})
                assert not ok.is_error
            async with httpx.AsyncClient(timeout=30) as http:
                big = await http.post(url, content=b"{" + b" " * 10_000 + b"}", headers={
                    "X-API-Key": TEST_API_KEY, "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream"})
        assert big.status_code == 413
        assert big.json()["success"] is False

    async def test_heavy_calls_spend_the_api_budget(self, make_settings: Callable[..., Settings]) -> None:
        settings = make_settings(rate_limit_heavy_per_minute=1, rate_limit_per_minute=1000,
                                 rate_limit_loopback=True)
        async with served(settings) as (c, _data, url):
            async with mcp_client(url) as client:
                first = await client.call_tool("search_knowledge", {"query": "tea"})
                second = await client.call_tool("search_knowledge", {"query": "tea"})
                listing = await client.call_tool("list_knowledge_bases", {})  # not heavy
            async with client_for(c) as api:
                r = await api.post("/api/v1/knowledge-search", json={"query": "tea",
                                                                      "knowledge_base_id": _data.kb_id})
        assert not first.is_error
        assert "Too many requests" in error_text(second)
        assert "retry after" in error_text(second)
        assert not listing.is_error
        assert r.status_code == 429  # one budget for the API and MCP

    async def test_requests_spend_the_request_budget(self, make_settings: Callable[..., Settings]) -> None:
        settings = make_settings(rate_limit_per_minute=3, rate_limit_loopback=True)
        async with (served(settings) as (_c, _data, url),
                    httpx.AsyncClient(timeout=30) as http):
            codes = [(await http.post(url, json={}, headers={"X-API-Key": TEST_API_KEY})).status_code
                     for _ in range(5)]
        assert codes[-1] == 429, codes

    async def test_cors_is_the_apis(self, make_settings: Callable[..., Settings]) -> None:
        preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "x-api-key, mcp-protocol-version, mcp-session-id"}
        async with started(make_settings()) as closed, client_for(closed) as http:
            refused = await http.options("/mcp", headers=preflight)
        async with started(make_settings(cors_origins=["https://app.example"])) as opened, \
                client_for(opened) as http:
            allowed = await http.options("/mcp", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        assert "mcp-session-id" in allowed.headers["access-control-allow-headers"].lower()
