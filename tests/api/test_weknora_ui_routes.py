"""Issue 13 item 9: the routes WeKnora's web UI reads on load of its knowledge, chat and settings pages,
through the real app on SQLite — the document preview, the processing timeline, the folder tree, conversation
search, follow-up suggestions, the parser list, and the features Knora lacks answered empty (and hidden by
``/system/capabilities``). Item 10: a session's ``source`` follows who created it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import TEST_API_KEY, client_for, started
from tests.polling import eventually

pytestmark = pytest.mark.integration

GUIDE = (b"# Tea guide\n\nGreen tea is steamed or pan-fired soon after picking.\n\n"
         b"## Brewing temperature\n\nBrew green tea at 80 degrees for two minutes; boiling water makes it "
         b"bitter.\n\n## Storage\n\nKeep oolong and green tea sealed, cool and away from light. Oolong keeps "
         b"for a year.\n")
BROWSER = {"X-API-Key": "", "Authorization": f"Bearer {TEST_API_KEY}"}  # the web UI sends its token so


@pytest.fixture
async def sqlite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    """SQLite services that may fetch a page from loopback (the URL import test serves one there)."""
    async with started(make_settings(allow_private_network_fetch=True)) as c:
        yield c


@pytest.fixture
async def http(sqlite_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(sqlite_container) as c:
        yield c


async def _kb(http: httpx.AsyncClient) -> str:
    return str((await http.post("/api/v1/knowledge-bases", json={"name": "Tea"})).json()["data"]["id"])


async def _parsed(http: httpx.AsyncClient, knowledge_id: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        k: dict[str, Any] = (await http.get(f"/api/v1/knowledge/{knowledge_id}")).json()["data"]
        return k if k["parse_status"] in ("completed", "failed") else None

    got = await eventually(done)
    assert got is not None
    assert got["parse_status"] == "completed", got
    return got


async def _upload(http: httpx.AsyncClient, kb: str, name: str = "tea.md", data: bytes = GUIDE) -> str:
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data)})
    assert r.status_code == 200, r.text
    knowledge_id = str(r.json()["data"]["id"])
    await _parsed(http, knowledge_id)
    return knowledge_id


async def _ask(http: httpx.AsyncClient, query: str, kb_ids: list[str], **headers: str) -> tuple[str, str]:
    """A quick-answer turn as the UI sends it; (session id, assistant message id) once it is complete."""
    s = (await http.post("/api/v1/sessions", json={}, headers=headers)).json()["data"]
    r = await http.post(f"/api/v1/knowledge-chat/{s['id']}", headers=headers,
                        content=json.dumps({"query": query, "knowledge_base_ids": kb_ids}))
    assert r.status_code == 200, r.text
    frames = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
    mid = frames[0]["assistant_message_id"]

    async def completed() -> bool:
        msgs = (await http.get(f"/api/v1/messages/{s['id']}/load")).json()["data"]
        return any(m["id"] == mid and m["is_completed"] for m in msgs)

    assert await eventually(completed)
    return str(s["id"]), str(mid)


class TestCapabilities:
    # what the page behind each supported capability reads first: it must answer, not 404
    PAGES = {"agents": "/api/v1/agents", "settings.mcp": "/api/v1/mcp-services",
             "settings.websearch": "/api/v1/web-search-providers"}

    async def test_a_supported_capability_has_its_routes(self, http: httpx.AsyncClient) -> None:
        caps = (await http.get("/api/v1/system/capabilities")).json()["data"]["capabilities"]
        assert caps["settings.websearch"]["supported"] is True
        for key, cap in caps.items():
            if cap["supported"] and key in self.PAGES:
                r = await http.get(self.PAGES[key])
                assert r.status_code == 200, (key, r.text)
                assert isinstance(r.json()["data"], list), key
        for key in ("organizations", "integrations.im", "integrations.embed", "settings.vectorstore",
                    "settings.sandbox", "sandbox.workbench"):
            assert caps[key]["supported"] is False, key

    async def test_unsupported_features_read_empty_in_weknoras_shape(self, http: httpx.AsyncClient) -> None:
        orgs = (await http.get("/api/v1/organizations")).json()
        assert orgs["success"] is True
        assert orgs["data"]["organizations"] == []
        assert orgs["data"]["total"] == 0
        assert (await http.get("/api/v1/me/invitations/pending-count")).json()["data"] == {"pending_count": 0}
        assert (await http.get("/api/v1/me/invitations")).json()["data"] == {"invitations": [], "total": 0}
        for path in ("/api/v1/user/favorites?type=kb", "/api/v1/user/favorites?type=agent",
                     "/api/v1/im-channels",
                     "/api/v1/embed-channels", "/api/v1/vector-stores", "/api/v1/vector-stores/types",
                     "/api/v1/agents/builtin-quick-answer/im-channels"):
            r = await http.get(path)
            assert r.status_code == 200, path
            assert r.json() == {"success": True, "data": []}, path
        bad = await http.get("/api/v1/user/favorites?type=planet")
        assert bad.status_code == 400
        assert bad.json()["success"] is False
        # writes of a feature Knora lacks are not routed (WeKnora: route_not_registered)
        assert (await http.post("/api/v1/organizations", json={"name": "x"})).status_code in (404, 405)

    async def test_unsupported_reads_need_a_key(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container, **{"X-API-Key": ""}) as anon:
            assert (await anon.get("/api/v1/organizations")).status_code == 401


class TestParserEngines:
    async def test_lists_the_registry(self, http: httpx.AsyncClient, sqlite_container: Services) -> None:
        body = (await http.get("/api/v1/system/parser-engines")).json()
        assert body["success"] is True
        assert body["connected"] is True
        engines = {e["Name"]: e for e in body["data"]}
        assert {"pdf", "docx", "md", "txt", "html", "csv", "xlsx", "json"} <= set(engines)
        types = {t for e in body["data"] for t in e["FileTypes"]}
        assert types == set(sqlite_container.parsers.extensions)  # exactly what uploads accept
        assert "pdf" in engines["pdf"]["FileTypes"]
        assert engines["pdf"]["Available"] is True
        assert all(isinstance(e["Description"], str) and e["Description"] for e in body["data"])


class TestDocumentPage:
    async def test_preview_serves_the_original_with_its_type(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        kid = await _upload(http, kb)
        r = await http.get(f"/api/v1/knowledge/{kid}/preview")
        assert r.status_code == 200
        assert r.content == GUIDE
        assert r.headers["content-type"] == "text/markdown; charset=utf-8"
        assert r.headers["content-disposition"].startswith("inline;")
        assert r.headers["content-security-policy"] == "sandbox"

    async def test_preview_of_a_pdf_and_a_manual_entry(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                            json={"title": "Note", "content": "Oolong is half oxidised.",
                                  "status": "publish"})
        kid = r.json()["data"]["id"]
        got = await http.get(f"/api/v1/knowledge/{kid}/preview")
        assert got.content == b"Oolong is half oxidised."
        assert got.headers["content-type"].startswith("text/markdown")

    async def test_preview_of_an_import_is_its_indexed_text(self, http: httpx.AsyncClient) -> None:
        from tests.fakes.web_site import Page, serve

        page = (b"<html><head><title>Pu-erh</title></head><body><main><h1>Pu-erh</h1><p>Pu-erh is aged for "
                b"years in Yunnan.</p></main></body></html>")
        kb = await _kb(http)
        with serve({"/puerh": Page(page)}) as site:
            r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/url", json={"url": f"{site}/puerh"})
            assert r.status_code == 201, r.text
            kid = r.json()["data"]["id"]
            await _parsed(http, kid)
        got = await http.get(f"/api/v1/knowledge/{kid}/preview")
        assert got.status_code == 200
        assert got.headers["content-type"] == "text/markdown; charset=utf-8"
        assert "Pu-erh is aged for years in Yunnan." in got.text
        assert "<html>" not in got.text

    async def test_preview_of_unknown_and_other_tenants_documents(self, http: httpx.AsyncClient,
                                                                  sqlite_container: Services) -> None:
        kb = await _kb(http)
        kid = await _upload(http, kb)
        assert (await http.get("/api/v1/knowledge/not-an-id/preview")).status_code == 404
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.get(f"/api/v1/knowledge/{kid}/preview")).status_code == 404
            assert (await other.get(f"/api/v1/knowledge/{kid}/spans")).status_code == 404

    async def test_spans_timeline_follows_the_outcome(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        kid = await _upload(http, kb)
        data = (await http.get(f"/api/v1/knowledge/{kid}/spans")).json()["data"]
        assert data["knowledge_id"] == kid
        assert data["parse_status"] == "completed"
        trace = data["trace"]
        assert trace["kind"] == "root"
        assert trace["status"] == "done"
        stages = [(c["name"], c["status"]) for c in trace["children"]]
        assert stages == [("docreader", "done"), ("chunking", "done"), ("embedding", "done"),
                          ("multimodal", "skipped"), ("postprocess", "done")]
        assert "last_error" not in data
        assert (await http.get(f"/api/v1/knowledge/{kid}/stages")).json()["data"]["trace"]["status"] == "done"

    async def test_spans_of_a_failed_parse_carry_the_error(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": ("broken.pdf", b"%PDF-1.4 not really a pdf")})
        kid = r.json()["data"]["id"]

        async def failed() -> dict[str, Any] | None:
            d: dict[str, Any] = (await http.get(f"/api/v1/knowledge/{kid}/spans")).json()["data"]
            return d if d["parse_status"] == "failed" else None

        data = await eventually(failed)
        assert data is not None
        assert data["trace"]["children"][0] == {**data["trace"]["children"][0], "status": "failed"}
        assert data["trace"]["children"][1]["status"] == "cancelled"
        assert data["last_error"]["message"]

    async def test_folder_tree_puts_every_document_at_the_root(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        await _upload(http, kb)
        await _upload(http, kb, "notes.txt", b"Matcha is ground green tea.")
        tree = (await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge/folders")).json()["data"]
        assert tree == {"root_document_count": 2, "total_document_count": 2, "folders": []}
        missing = "00000000-0000-4000-8000-000000000000"
        assert (await http.get(f"/api/v1/knowledge-bases/{missing}/knowledge/folders")).status_code == 404


class TestChatPage:
    async def test_suggestions_come_from_the_answers_sources(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        await _upload(http, kb)
        sid, mid = await _ask(http, "How should I brew green tea?", [kb])
        r = await http.get(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions")
        assert r.status_code == 200, r.text
        got = r.json()["data"]
        assert got["status"] == "ready"
        assert got["assistant_message_id"] == mid
        assert got["session_id"] == sid
        texts = [q["text"] for q in got["questions"]]
        assert 1 <= len(texts) <= 3
        assert all(q["source"] == "document" and q["knowledge_base_ids"] == [kb] for q in got["questions"])
        # each suggestion names something the sources hold and the question did not ask
        assert any("Storage" in t for t in texts), texts
        assert all(t.endswith("?") for t in texts)
        assert len(set(texts)) == len(texts)
        # stored: the same set again, by either path, until a regenerate
        again = (await http.post(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions",
                                 json={})).json()["data"]
        assert again["id"] == got["id"]
        alias = (await http.get(f"/api/v1/messages/{sid}/{mid}/suggestions")).json()["data"]
        assert alias["id"] == got["id"]
        fresh = (await http.post(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions",
                                 json={"regenerate": True})).json()["data"]
        assert fresh["id"] != got["id"]
        assert [q["text"] for q in fresh["questions"]] == texts
        ev = await http.post(f"/api/v1/sessions/{sid}/suggestion-events",
                             json={"suggestion_set_id": got["id"], "question_id": got["questions"][0]["id"],
                                   "event_type": "click"})
        assert ev.status_code == 200
        assert ev.json()["success"] is True
        bad = await http.post(f"/api/v1/sessions/{sid}/suggestion-events", json={"event_type": "stare"})
        assert bad.status_code == 400

    async def test_no_sources_no_suggestions(self, http: httpx.AsyncClient) -> None:
        sid, mid = await _ask(http, "hello there", [])
        got = (await http.get(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions")).json()["data"]
        assert got["status"] == "suppressed"
        assert got["questions"] == []

    async def test_suggestions_are_scoped(self, http: httpx.AsyncClient, sqlite_container: Services) -> None:
        sid, mid = await _ask(http, "hello there", [])
        missing = "00000000-0000-4000-8000-000000000000"
        assert (await http.get(f"/api/v1/sessions/{sid}/messages/{missing}/suggestions")).status_code == 404
        assert (await http.post(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions",
                                json={"regenerate": "yes"})).status_code == 400
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.get(f"/api/v1/sessions/{sid}/messages/{mid}/suggestions")).status_code == 404

    async def test_message_search_groups_question_and_answer(self, http: httpx.AsyncClient,
                                                             sqlite_container: Services) -> None:
        kb = await _kb(http)
        await _upload(http, kb)
        sid, _ = await _ask(http, "How should I store oolong?", [kb])
        await _ask(http, "hello there", [])
        r = await http.post("/api/v1/messages/search", json={"query": "OOLONG", "mode": "hybrid"})
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        assert data["total"] == len(data["items"]) >= 1
        top = data["items"][0]
        assert top["session_id"] == sid
        assert top["query_content"] == "How should I store oolong?"
        assert top["answer_content"]
        assert top["match_type"] == "keyword"
        assert top["score"] > 0
        assert {"request_id", "session_title", "created_at"} <= set(top)
        only = (await http.post("/api/v1/messages/search",
                                json={"query": "oolong", "session_ids": ["nope"]})).json()["data"]
        assert only == {"items": [], "total": 0}
        for bad in ({}, {"query": ""}, {"query": "x", "mode": "psychic"}, {"query": "x", "limit": "many"},
                    {"query": "x", "session_ids": "s"}):
            assert (await http.post("/api/v1/messages/search", json=bad)).status_code == 400, bad
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            theirs = (await other.post("/api/v1/messages/search", json={"query": "oolong"})).json()["data"]
            assert theirs == {"items": [], "total": 0}


class TestSessionSource:
    async def test_the_ui_makes_web_sessions_and_api_keys_make_api_sessions(
            self, http: httpx.AsyncClient) -> None:
        ui = (await http.post("/api/v1/sessions", json={}, headers=BROWSER)).json()["data"]
        sdk = (await http.post("/api/v1/sessions", json={"source": "web"})).json()["data"]
        assert ui["source"] == "web"
        assert sdk["source"] == "api"  # a client cannot claim the sidebar's bucket
        sidebar = (await http.get("/api/v1/sessions", params={"page": 1, "page_size": 30, "source": "web"},
                                  headers=BROWSER)).json()
        assert [s["id"] for s in sidebar["data"]] == [ui["id"]]
        api = (await http.get("/api/v1/sessions", params={"page_size": 1, "source": "api"})).json()
        assert api["total"] == 1
        assert api["data"][0]["id"] == sdk["id"]
        assert (await http.get("/api/v1/sessions")).json()["total"] == 2

    async def test_openai_api_sessions_are_api(self, http: httpx.AsyncClient) -> None:
        kb = await _kb(http)
        r = await http.post("/v1/chat/completions", headers={"X-Knora-Session-Id": "new"},
                            json={"model": f"knora:kb/{kb}", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        listed = (await http.get("/api/v1/sessions", params={"source": "web"})).json()
        assert listed["total"] == 0
        assert (await http.get("/api/v1/sessions", params={"source": "api"})).json()["total"] == 1


class TestOnEachDatabase:
    """The new queries (message search, provider rows, suggestions kept with the message) on SQLite and
    PostgreSQL (``store_client``: its retrieval engine records writes and finds nothing)."""

    async def test_search_providers_and_suggestions(self, store_client: httpx.AsyncClient) -> None:
        http = store_client
        sid, mid = await _ask(http, "How should I brew green tea?", [])
        found = (await http.post("/api/v1/messages/search", json={"query": "brew GREEN"})).json()["data"]
        assert found["items"][0]["session_id"] == sid
        assert found["items"][0]["answer_content"]
        url = f"/api/v1/sessions/{sid}/messages/{mid}/suggestions"
        got = (await http.post(url, json={})).json()["data"]
        assert got["status"] == "suppressed"  # the turn found no sources
        assert (await http.get(url)).json()["data"]["id"] == got["id"]
        a = (await http.post("/api/v1/web-search-providers",
                             json={"name": "A", "provider": "duckduckgo"})).json()["data"]
        b = (await http.post("/api/v1/web-search-providers",
                             json={"name": "B", "provider": "duckduckgo", "is_default": True})).json()["data"]
        listed = (await http.get("/api/v1/web-search-providers")).json()["data"]
        assert [(p["id"], p["is_default"]) for p in listed] == [(a["id"], False), (b["id"], True)]
