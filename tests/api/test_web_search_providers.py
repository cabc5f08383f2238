"""``/web-search-providers`` through the real app: CRUD in WeKnora's shapes, the key never answered, tests
against a real (loopback) SearXNG, and a chat turn that searches the web with the tenant's default
provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from knora.root import Services
from tests.conftest import client_for
from tests.fakes.web_site import Page, serve
from tests.polling import eventually

pytestmark = pytest.mark.integration

RESULTS = {"results": [{"title": "Yunnan tea farms", "url": "https://tea.example/yunnan",
                        "content": "Pu-erh comes from Yunnan.", "engine": "fake"}]}


@pytest.fixture
def searxng() -> Iterator[str]:
    with serve({}, default=Page(json.dumps(RESULTS).encode(), "application/json")) as base:
        yield base


@pytest.fixture
async def http(sqlite_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(sqlite_container) as c:
        yield c


class TestCrud:
    async def test_types_list_what_knora_has(self, http: httpx.AsyncClient) -> None:
        types = (await http.get("/api/v1/web-search-providers/types")).json()["data"]
        assert {t["id"] for t in types} == {"duckduckgo", "searxng", "tavily", "bing"}
        tavily = next(t for t in types if t["id"] == "tavily")
        assert tavily["requires_api_key"] is True
        assert tavily["requires_base_url"] is False
        catalogue = (await http.get("/api/v1/web-search/providers")).json()["data"]
        assert [t["id"] for t in catalogue] == [t["id"] for t in types]

    async def test_create_read_update_delete(self, http: httpx.AsyncClient) -> None:
        assert (await http.get("/api/v1/web-search-providers")).json() == {"success": True, "data": []}
        r = await http.post("/api/v1/web-search-providers",
                            json={"name": "Tavily", "provider": "tavily", "description": "d",
                                  "parameters": {"api_key": "tvly-secret", "proxy_url": None}})
        assert r.status_code == 201, r.text
        p = r.json()["data"]
        assert "tvly-secret" not in r.text
        assert p["is_default"] is True
        assert p["credentials"] == {"api_key": {"configured": True}}
        assert isinstance(p["tenant_id"], int)
        assert p["created_at"].endswith(("Z", "+00:00"))
        got = (await http.get(f"/api/v1/web-search-providers/{p['id']}")).json()["data"]
        assert got["name"] == "Tavily"
        assert "api_key" not in got["parameters"]
        upd = await http.put(f"/api/v1/web-search-providers/{p['id']}", json={"name": "Tav"})
        assert upd.json()["data"]["name"] == "Tav"
        assert upd.json()["data"]["credentials"]["api_key"]["configured"]
        cred = await http.delete(f"/api/v1/web-search-providers/{p['id']}/credentials/api_key")
        assert cred.json()["data"] == {"fields": {"api_key": {"configured": False}}}
        put = await http.put(f"/api/v1/web-search-providers/{p['id']}/credentials", json={"api_key": "k2"})
        assert put.json()["data"] == {"fields": {"api_key": {"configured": True}}}
        assert "k2" not in put.text
        assert (await http.delete(f"/api/v1/web-search-providers/{p['id']}")).json()["success"] is True
        assert (await http.get(f"/api/v1/web-search-providers/{p['id']}")).status_code == 404

    async def test_bad_input_is_a_4xx(self, http: httpx.AsyncClient) -> None:
        for body in ({"name": "x", "provider": "google"}, {"name": "x", "provider": "bing"},
                     {"provider": "duckduckgo"}, {"name": 3, "provider": "duckduckgo"},
                     {"name": "x", "provider": "duckduckgo", "parameters": []},
                     {"name": "x", "provider": "searxng", "parameters": {"base_url": "ftp://x"}}):
            r = await http.post("/api/v1/web-search-providers", json=body)
            assert 400 <= r.status_code < 500, (body, r.text)
            assert r.json()["success"] is False
        assert (await http.post("/api/v1/web-search-providers", content=b"[1]")).status_code == 400
        missing = "00000000-0000-4000-8000-000000000000"
        assert (await http.put(f"/api/v1/web-search-providers/{missing}", json={})).status_code == 404
        assert (await http.delete(f"/api/v1/web-search-providers/{missing}/credentials/x")).status_code == 404

    async def test_another_tenant_sees_none(self, http: httpx.AsyncClient,
                                            sqlite_container: Services) -> None:
        p = (await http.post("/api/v1/web-search-providers",
                             json={"name": "D", "provider": "duckduckgo"})).json()["data"]
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.get("/api/v1/web-search-providers")).json()["data"] == []
            assert (await other.get(f"/api/v1/web-search-providers/{p['id']}")).status_code == 404
            assert (await other.delete(f"/api/v1/web-search-providers/{p['id']}")).status_code == 404


class TestUse:
    async def test_connection_tests_search_for_real(self, http: httpx.AsyncClient, searxng: str) -> None:
        raw = await http.post("/api/v1/web-search-providers/test",
                              json={"provider": "searxng", "parameters": {"base_url": searxng}})
        assert raw.status_code == 200, raw.text
        assert raw.json()["data"] == {"ok": True, "result_count": 1}
        p = (await http.post("/api/v1/web-search-providers", json={
            "name": "S", "provider": "searxng", "parameters": {"base_url": searxng}})).json()["data"]
        assert (await http.post(f"/api/v1/web-search-providers/{p['id']}/test")).json()["data"]["ok"] is True
        with serve({}) as dead:  # every path 404s
            bad = await http.post("/api/v1/web-search-providers/test",
                                  json={"provider": "searxng", "parameters": {"base_url": dead}})
        assert bad.status_code == 400
        assert "searxng error 404" in bad.json()["error"]["message"]

    async def test_a_chat_turn_searches_with_the_tenant_default(self, http: httpx.AsyncClient,
                                                                searxng: str) -> None:
        await http.post("/api/v1/web-search-providers",
                        json={"name": "S", "provider": "searxng", "parameters": {"base_url": searxng}})
        s = (await http.post("/api/v1/sessions", json={})).json()["data"]
        r = await http.post(f"/api/v1/knowledge-chat/{s['id']}",
                            content=json.dumps({"query": "Where does pu-erh come from?",
                                                "knowledge_base_ids": [], "web_search_enabled": True}))
        assert r.status_code == 200, r.text

        async def references() -> list[dict[str, object]]:
            msgs = (await http.get(f"/api/v1/messages/{s['id']}/load")).json()["data"]
            done = [m for m in msgs if m["role"] == "assistant" and m["is_completed"]]
            return done[0]["knowledge_references"] if done else []

        refs = await eventually(references)
        assert any("Pu-erh comes from Yunnan." in str(ref.get("content")) for ref in refs), refs
