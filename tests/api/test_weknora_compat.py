"""Client-compatibility audit, part 1: what WeKnora's web UI does at start-up and on its chat page (api §1,
§6(c)).

Every test walks a real client's requests against the real app and asserts the exact wire shapes those clients
depend on: paths, statuses, the envelope, field names and JSON types, and the 404-never-401 rule.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import httpx
import pytest

from knora.api.app import create_app
from knora.root import Services
from tests.conftest import TEST_API_KEY, TEST_OWNER_EMAIL, TEST_OWNER_PASSWORD
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.integration

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# RFC 3339 as Go's time.Time.UnmarshalJSON accepts it: a date, "T", a time, optional fraction, a zone.
RFC3339_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def assert_rfc3339(value: Any, *, nullable: bool = True) -> None:
    if value is None and nullable:
        return
    assert isinstance(value, str), f"not RFC 3339: {value!r}"
    assert RFC3339_RE.match(value), f"not RFC 3339: {value!r}"
    datetime.fromisoformat(value)


def assert_uuid(value: Any) -> None:
    assert isinstance(value, str), f"not a UUID: {value!r}"
    assert UUID_RE.match(value), f"not a UUID: {value!r}"


def assert_int(value: Any) -> None:
    assert isinstance(value, int), f"not an integer: {value!r}"
    assert not isinstance(value, bool), f"not an integer: {value!r}"


def fe_error_text(body: Any) -> str:
    """frontend/src/utils/request.ts: ``error`` if a string, else ``error.message``, else ``message``."""
    err = body.get("error")
    if isinstance(err, str):
        return err
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])
    return str(body.get("message") or "")


# what the web UI sends once signed in: its token as a bearer, no X-API-Key
BROWSER = {"X-API-Key": "", "Authorization": f"Bearer {TEST_API_KEY}"}


def anonymous(http: httpx.AsyncClient) -> httpx.AsyncClient:
    """A client on the same app with no credentials at all."""
    return httpx.AsyncClient(transport=http._transport, base_url=str(http.base_url), timeout=60)


class TestTransport:
    async def test_health_needs_no_auth(self, sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            r = await anon.get("/health")
        assert r.status_code == 200
        assert r.json() == {"status": "ok"}

    @pytest.mark.parametrize("path", [
        "/api/v1/no-such-endpoint",
        "/api/v1/skills/catalog/no-such-skill",
        # /user/favorites, /me/invitations/pending-count and /organizations are served (empty, as WeKnora
        # answers a workspace without them): tests/api/test_weknora_ui_routes.py
    ])
    async def test_unknown_routes_are_404_never_401_even_without_credentials(
            self, sqlite_client: httpx.AsyncClient, path: str) -> None:
        async with anonymous(sqlite_client) as anon:
            bare = await anon.get(path)
            bare_post = await anon.post(path, json={})
        authed = await sqlite_client.get(path)
        authed_post = await sqlite_client.post(path, json={})
        for r in (bare, bare_post, authed, authed_post):
            assert r.status_code == 404, (path, r.request.method, r.status_code, r.text)

    async def test_api_404_is_the_envelope_with_an_integer_code(self,
                                                                sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/no-such-endpoint")
        body = r.json()
        assert body["success"] is False
        assert body["error"]["code"] == 1003
        assert_int(body["error"]["code"])

    async def test_405_is_the_envelope_and_names_every_allowed_method(
            self, sqlite_client: httpx.AsyncClient) -> None:
        # A wrong method the UI catch-all takes is gin's 404; one it does not take (TRACE) is a 405.
        assert (await sqlite_client.delete("/api/v1/knowledge-bases")).status_code == 404
        r = await sqlite_client.request("TRACE", "/api/v1/knowledge-bases")
        assert r.status_code == 405, r.text
        assert r.json()["success"] is False
        assert r.json()["error"]["code"] == 1004
        assert r.headers["allow"] == "GET, POST"
        page = await sqlite_client.request("TRACE", "/some/ui/route")
        assert page.status_code == 405
        assert page.headers["allow"] == "GET, HEAD"

    async def test_unknown_route_outside_the_api_is_gins_plain_text(self,
                                                                    sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/definitely-not-here.php")
        assert r.status_code == 404
        assert r.text == "404 page not found"

    async def test_request_id_is_kept_or_generated_and_echoed(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/agents", headers={"X-Request-ID": "req-abc"})
        assert r.headers["X-Request-ID"] == "req-abc"
        generated = (await sqlite_client.get("/api/v1/agents")).headers["X-Request-ID"]
        assert_uuid(generated)

    async def test_cors_preflight_skips_auth_and_allows_the_api_key_header(
            self, sqlite_container: Services) -> None:
        """A UI on another origin (WeKnora's dev server without its proxy) must be listed by the operator:
        CORS is closed by default, so the origin is set here."""
        settings = sqlite_container.settings.model_copy(update={"cors_origins": ["http://localhost:5173"]})
        app = create_app(settings, services=sqlite_container)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://knora.test") as anon:
            r = await anon.options("/api/v1/sessions", headers={
                "Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-api-key,authorization,x-request-id"})
        assert r.status_code == 200, r.text
        allowed = r.headers["access-control-allow-headers"].lower()
        assert all(h in allowed for h in ("x-api-key", "authorization", "x-request-id"))
        assert "POST" in r.headers["access-control-allow-methods"]


class TestAuth:
    async def test_missing_credentials_is_401_with_a_readable_error(self,
                                                                    sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            r = await anon.get("/api/v1/sessions")
        assert r.status_code == 401
        body = r.json()
        assert body["success"] is False
        assert fe_error_text(body) == "Unauthorized: missing authentication"
        assert body["error"]["code"] == 1001

    async def test_bad_key_is_401_invalid_api_key(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/sessions", headers={"X-API-Key": "sk-wrong"})
        assert r.status_code == 401
        assert fe_error_text(r.json()) == "Unauthorized: invalid API key"

    async def test_bearer_and_x_api_key_both_authenticate(self, sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            key = await anon.get("/api/v1/agents", headers={"X-API-Key": TEST_API_KEY})
            bearer = await anon.get("/api/v1/agents", headers={"Authorization": f"Bearer {TEST_API_KEY}"})
            # An invalid bearer is not rejected outright: the key is tried too (api §1.2).
            both = await anon.get("/api/v1/agents", headers={"Authorization": "Bearer expired.jwt.token",
                                                             "X-API-Key": TEST_API_KEY})
        assert key.status_code == bearer.status_code == both.status_code == 200
        ids = [[(a["id"], a["tenant_id"]) for a in r.json()["data"]] for r in (key, bearer, both)]
        assert ids[0] == ids[1] == ids[2]
        assert ids[0]

    async def test_auto_setup_logs_the_ui_in_silently(self, sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            # the UI's own, same-origin call on a loopback host (knora.test is not one)
            r = await anon.post("http://127.0.0.1:8080/api/v1/auth/auto-setup", json={},
                                headers={"Origin": "http://127.0.0.1:8080"})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["success"] is True
            for key in ("user", "tenant", "active_tenant", "memberships", "token", "refresh_token"):
                assert key in body, key
            user, tenant = body["user"], body["tenant"]
            assert {"id", "username", "email", "tenant_id"} <= set(user)
            assert_int(user["tenant_id"])
            assert_int(tenant["id"])
            assert isinstance(tenant["name"], str)
            assert body["active_tenant"] == tenant
            assert user["tenant_id"] == tenant["id"]
            assert body["memberships"] == [{"tenant_id": tenant["id"], "tenant_name": tenant["name"],
                                            "role": "owner"}]
            assert isinstance(body["token"], str)
            assert body["token"]
            # The UI now sends the token as a bearer on every request.
            me = await anon.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}"})
            assert me.status_code == 200
            assert me.json()["data"]["tenant"]["id"] == tenant["id"]
            refreshed = await anon.post("/api/v1/auth/refresh", json={"refreshToken": body["refresh_token"]})
        assert refreshed.status_code == 200
        rb = refreshed.json()
        assert rb["success"] is True
        assert isinstance(rb["access_token"], str)
        assert rb["refresh_token"]

    async def test_login_page_signs_the_owner_in(self, sqlite_client: httpx.AsyncClient) -> None:
        """Off the loopback interface auto-setup is refused, so the FE shows its login page (POST /auth/login,
        P0 for the FE): the owner account made on first start signs in with its password."""
        async with anonymous(sqlite_client) as anon:
            r = await anon.post("/api/v1/auth/login", json={"email": TEST_OWNER_EMAIL,
                                                            "password": TEST_OWNER_PASSWORD})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["success"] is True
            assert body["token"]
            assert body["refresh_token"]
            assert_int(body["active_tenant"]["id"])
            assert body["memberships"][0]["role"] == "owner"
            me = await anon.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}"})
            assert me.status_code == 200
            bad = await anon.post("/api/v1/auth/login", json={"email": TEST_OWNER_EMAIL,
                                                              "password": "wrong-pw"})
        assert bad.status_code == 401
        assert bad.json()["success"] is False
        assert fe_error_text(bad.json())

    async def test_refresh_with_a_bad_token_is_401(self, sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            r = await anon.post("/api/v1/auth/refresh", json={"refreshToken": "nope"})
        assert r.status_code == 401

    async def test_auth_me_shape(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/auth/me")
        assert r.status_code == 200
        data = r.json()["data"]
        assert set(data) >= {"user", "tenant", "memberships", "tenant_required", "capabilities"}
        assert data["tenant_required"] is False
        assert data["capabilities"] == {"can_create_tenant": False, "auto_accept_invitation": False}
        assert_int(data["tenant"]["id"])
        assert isinstance(data["memberships"], list)
        assert data["memberships"]

    async def test_auth_config_is_public(self, sqlite_client: httpx.AsyncClient) -> None:
        async with anonymous(sqlite_client) as anon:
            r = await anon.get("/api/v1/auth/config")
        assert r.status_code == 200
        assert r.json()["registration_mode"] in ("self_serve", "invite_only")


CAPABILITY_KEYS = ("organizations", "agents", "integrations.im", "integrations.embed", "integrations.api",
                   "settings.mcp", "settings.websearch", "settings.vectorstore", "settings.storage",
                   "settings.sandbox")


class TestSystem:
    async def test_capabilities_hide_what_knora_lacks(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/system/capabilities")
        assert r.status_code == 200
        data = r.json()["data"]
        assert isinstance(data["edition"], str)
        caps = data["capabilities"]
        for key in CAPABILITY_KEYS:
            assert isinstance(caps[key]["supported"], bool), key
        for key in ("organizations", "integrations.im", "integrations.embed", "settings.sandbox"):
            assert caps[key]["supported"] is False, key
        assert caps["agents"]["supported"] is True

    async def test_system_info_fields(self, sqlite_client: httpx.AsyncClient) -> None:
        data = (await sqlite_client.get("/api/v1/system/info")).json()["data"]
        for key in ("version", "edition", "commit_id", "build_time", "go_version", "keyword_index_engine",
                    "vector_store_engine", "graph_database_engine", "minio_enabled", "db_version"):
            assert key in data, key
        assert isinstance(data["version"], str)
        assert isinstance(data["minio_enabled"], bool)


def _model_fields(m: dict[str, Any]) -> None:
    for key in ("id", "tenant_id", "name", "type", "source", "description", "parameters", "is_default",
                "is_builtin", "status", "created_at", "updated_at"):
        assert key in m, key
    assert "api_key" not in m
    assert "api_key" not in m["parameters"]
    assert_int(m["tenant_id"])
    assert_rfc3339(m["created_at"])
    assert_rfc3339(m["updated_at"])


class TestFrontendStartup:
    async def test_models_list_has_a_ready_knowledgeqa_model(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/models")
        assert r.status_code == 200
        models = r.json()["data"]
        assert isinstance(models, list)
        for m in models:
            _model_fields(m)
        assert any(m["type"] == "KnowledgeQA" for m in models)
        assert any(m["type"] == "Embedding" for m in models)

    async def test_default_agent_points_at_a_knowledgeqa_model(self,
                                                               sqlite_client: httpx.AsyncClient) -> None:
        """The FE refuses to send until the selected agent's config.model_id is a KnowledgeQA model's id."""
        models = (await sqlite_client.get("/api/v1/models")).json()["data"]
        qa_ids = {m["id"] for m in models if m["type"] == "KnowledgeQA"}
        r = await sqlite_client.get("/api/v1/agents")
        assert r.status_code == 200
        agents = {a["id"]: a for a in r.json()["data"]}
        quick = agents["builtin-quick-answer"]
        assert quick["is_builtin"] is True
        assert isinstance(quick["name"], str)
        assert quick["name"]
        assert quick["config"]["agent_mode"] == "quick-answer"
        assert quick["config"]["model_id"] in qa_ids
        assert quick["config"]["kb_selection_mode"] in ("all", "selected", "none")
        smart = agents["builtin-smart-reasoning"]
        assert smart["config"]["agent_mode"] == "smart-reasoning"
        assert smart["config"]["model_id"] in qa_ids
        assert isinstance(smart["config"]["allowed_tools"], list)
        assert smart["config"]["allowed_tools"]

    async def test_smart_reasoning_gets_the_builtin_rerank_model_until_a_default_is_marked(
            self, sqlite_client: httpx.AsyncClient) -> None:
        """The FE needs a Rerank model for smart reasoning: the built-in one is listed and offered; a stored
        row is offered once the tenant marks it default (a row not marked never is: a dead one would
        otherwise rerank every turn)."""
        models = (await sqlite_client.get("/api/v1/models")).json()["data"]
        builtin = next(m for m in models if m["id"] == "builtin-rerank")
        _model_fields(builtin)
        assert builtin["type"] == "Rerank"
        assert builtin["is_builtin"] is True
        smart = (await sqlite_client.get("/api/v1/agents/builtin-smart-reasoning")).json()["data"]
        assert smart["config"]["rerank_model_id"] == "builtin-rerank"
        r = await sqlite_client.post("/api/v1/models", json={
            "name": "bge-reranker", "type": "Rerank", "source": "remote",
            "parameters": {"base_url": "http://127.0.0.1:9/v1", "api_key": "secret"}})
        assert r.status_code == 201, r.text
        rerank = r.json()["data"]
        _model_fields(rerank)
        assert rerank["type"] == "Rerank"
        assert "secret" not in r.text
        smart = (await sqlite_client.get("/api/v1/agents/builtin-smart-reasoning")).json()["data"]
        assert smart["config"]["rerank_model_id"] == "builtin-rerank"
        assert (await sqlite_client.put(f"/api/v1/models/{rerank['id']}/default")).status_code == 200
        smart = (await sqlite_client.get("/api/v1/agents/builtin-smart-reasoning")).json()["data"]
        assert smart["config"]["rerank_model_id"] == rerank["id"]
        listed = (await sqlite_client.get(f"/api/v1/models/{rerank['id']}")).json()["data"]
        assert listed["id"] == rerank["id"]
        assert "secret" not in str(listed)

    async def test_agent_records_have_go_sdk_types(self, sqlite_client: httpx.AsyncClient) -> None:
        for a in (await sqlite_client.get("/api/v1/agents")).json()["data"]:
            assert set(a) >= {"id", "name", "description", "avatar", "is_builtin", "tenant_id", "created_at",
                              "updated_at", "config"}
            assert_int(a["tenant_id"])
            assert_rfc3339(a["created_at"])
            assert_rfc3339(a["updated_at"])
            for key in ("knowledge_bases", "allowed_tools", "mcp_services"):
                if key in a["config"]:
                    assert isinstance(a["config"][key], list), (a["id"], key)

    async def test_custom_agent_ids_are_uuids_and_create_is_201(self,
                                                                sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.post("/api/v1/agents", json={"name": "Helper", "description": "d",
                                                             "config": {"agent_mode": "quick-answer"}})
        assert r.status_code == 201, r.text
        agent = r.json()["data"]
        assert_uuid(agent["id"])
        assert agent["is_builtin"] is False
        assert (await sqlite_client.get(f"/api/v1/agents/{agent['id']}")).json()["data"]["id"] == agent["id"]

    async def test_startup_lists_are_empty_lists_not_null(self, sqlite_client: httpx.AsyncClient) -> None:
        for path in ("/api/v1/knowledge-bases", "/api/v1/shared-knowledge-bases", "/api/v1/mcp-services",
                     "/api/v1/shared-agents"):
            r = await sqlite_client.get(path)
            assert r.status_code == 200, (path, r.text)
            assert r.json() == {"success": True, "data": []}, path
        sessions = (await sqlite_client.get("/api/v1/sessions",
                                            params={"page": 1, "page_size": 30, "source": "web"})).json()
        assert sessions["data"] == []
        assert sessions["total"] == 0

    async def test_unknown_agent_is_404(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/agents/builtin-nope")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == 1003

    async def test_suggested_questions_for_the_default_agent(self, sqlite_client: httpx.AsyncClient) -> None:
        r = await sqlite_client.get("/api/v1/agents/builtin-quick-answer/suggested-questions")
        assert r.status_code in (200, 404)
        if r.status_code == 200:
            assert r.json()["success"] is True


WEKNORA_TYPES = {"agent_query", "tool_call", "tool_result", "references", "memory_recalled", "thinking",
                 "answer",
                 "reflection", "tool_approval_required", "tool_approval_resolved", "mcp_oauth_required",
                 "mcp_oauth_resolved", "error", "complete", "session_title", "stop"}


class TestFrontendChatPage:
    async def test_new_chat_send_and_history(self, sqlite_client: httpx.AsyncClient) -> None:
        # the UI signs in and sends its token as a bearer: its sessions are the sidebar's ``source=web``
        r = await sqlite_client.post("/api/v1/sessions", headers=BROWSER, json={
            "agent_config": {"agent_id": "builtin-quick-answer", "enabled": True}})
        assert r.status_code == 201, r.text
        s = r.json()["data"]
        assert_uuid(s["id"])
        assert isinstance(s["title"], str)
        assert_int(s["tenant_id"])
        assert_rfc3339(s["created_at"], nullable=False)
        assert_rfc3339(s["updated_at"], nullable=False)

        # fetch-event-source posts JSON but may label it ``Content-Type: text/event-stream`` (api §6).
        body = {"query": "hello there", "knowledge_base_ids": [], "agent_enabled": False,
                "agent_id": "builtin-quick-answer", "web_search_enabled": False, "mentioned_items": []}
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{s['id']}", content=json.dumps(body),
                                     headers={"Content-Type": "text/event-stream",
                                              "Accept": "text/event-stream",
                                              "X-Request-ID": "fe-req-1"})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache"
        stream = parse_sse(r.content)  # strict: event:message, data:{one line}, field order
        assert stream.types[0] == "agent_query"
        assert "complete" in stream.types
        assert all(f["id"] == "fe-req-1" for f in stream.frames)
        assert stream.types[stream.types.index("complete") + 1:] in ([], ["session_title"])
        first = stream.frames[0]
        assert first["done"] is True
        assert first["content"] == ""
        assert first["session_id"] == s["id"]
        assert first["data"]["session_id"] == s["id"]
        assert_uuid(first["assistant_message_id"])
        assert first["data"]["assistant_message_id"] == first["assistant_message_id"]
        # Knora's extra frames (stage timings) must be inert in the FE's fallback path
        for f in stream.frames:
            if f["response_type"] not in WEKNORA_TYPES:
                assert f["content"] == "", f
                assert f["done"] is False, f
        answers = stream.of("answer")
        assert answers
        assert answers[-1]["done"] is True
        assert all(isinstance(f["data"]["event_id"], str) for f in answers)
        assert stream.answer()
        title = stream.of("session_title")
        if title:
            assert title[0]["done"] is True
            assert title[0]["data"]["session_id"] == s["id"]

        history = await sqlite_client.get(f"/api/v1/messages/{s['id']}/load", params={"limit": 20})
        assert history.status_code == 200
        msgs = history.json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        user, bot = msgs
        assert user["content"] == "hello there"
        assert bot["id"] == first["assistant_message_id"]
        assert bot["is_completed"] is True
        assert bot["content"] == stream.answer()
        for m in msgs:
            assert m["request_id"] == "fe-req-1"
            assert_uuid(m["id"])
            assert_rfc3339(m["created_at"], nullable=False)
            assert_rfc3339(m["updated_at"])
            for key in ("knowledge_references", "agent_steps", "mentioned_items", "images"):
                assert isinstance(m[key], list), key

        # The sidebar refreshes: the new session is listed, titled.
        listed = (await sqlite_client.get("/api/v1/sessions",
                                          params={"page": 1, "page_size": 30, "source": "web"})).json()
        assert listed["total"] == 1
        assert listed["page"] == 1
        assert listed["page_size"] == 30
        assert listed["data"][0]["id"] == s["id"]

    async def test_history_paging_by_before_time(self, sqlite_client: httpx.AsyncClient) -> None:
        sid = (await sqlite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
        for q in ("one", "two"):
            await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", json={"query": q,
                                                                            "disable_title": True})
        msgs = (await sqlite_client.get(f"/api/v1/messages/{sid}/load")).json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
        older = (await sqlite_client.get(f"/api/v1/messages/{sid}/load",
                                         params={"limit": 20,
                                                 "before_time": msgs[2]["created_at"]})).json()["data"]
        assert [m["id"] for m in older] == [m["id"] for m in msgs[:2]]
        # The Go SDK formats before_time with time.RFC3339Nano: up to nine fractional digits.
        stamp = msgs[2]["created_at"].replace("Z", "")
        head, _, frac = stamp.partition(".")
        nano = f"{head}.{(frac + '000000000')[:9]}Z"
        older_nano = (await sqlite_client.get(f"/api/v1/messages/{sid}/load",
                                              params={"limit": 20, "before_time": nano})).json()["data"]
        assert [m["id"] for m in older_nano] == [m["id"] for m in msgs[:2]]
        bad = await sqlite_client.get(f"/api/v1/messages/{sid}/load", params={"before_time": "yesterday"})
        assert bad.status_code == 400
        assert bad.json()["error"]["code"] == 1000

    async def test_rename_and_delete_a_session(self, sqlite_client: httpx.AsyncClient) -> None:
        sid = (await sqlite_client.post("/api/v1/sessions", json={"title": "a"})).json()["data"]["id"]
        r = await sqlite_client.put(f"/api/v1/sessions/{sid}", json={"title": "renamed"})
        assert r.status_code == 200
        assert r.json()["data"]["title"] == "renamed"
        r = await sqlite_client.delete(f"/api/v1/sessions/{sid}")
        assert r.status_code == 200
        assert r.json() == {"success": True, "message": "Session deleted successfully"}
        gone = await sqlite_client.get(f"/api/v1/sessions/{sid}")
        assert gone.status_code == 404
        assert gone.json()["error"]["code"] == 1003

    async def test_chat_errors_before_the_stream_are_json(self, sqlite_client: httpx.AsyncClient) -> None:
        sid = (await sqlite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", json={"query": ""})
        assert r.status_code == 400
        assert r.json()["error"]["code"] == 1000
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{sid}", json={})
        assert r.status_code == 400
        assert r.json()["error"]["code"] == 1000
        missing = "00000000-0000-4000-8000-000000000000"
        r = await sqlite_client.post(f"/api/v1/knowledge-chat/{missing}", json={"query": "q"})
        assert r.status_code == 404
        assert r.json()["error"] == {"code": 1003, "message": "Session not found"}

    async def test_agent_chat_requires_an_agent_when_agent_mode_is_on(
            self, sqlite_client: httpx.AsyncClient) -> None:
        sid = (await sqlite_client.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await sqlite_client.post(f"/api/v1/agent-chat/{sid}", json={"query": "q", "agent_enabled": True})
        assert r.status_code == 400
        assert "agent_id is required" in fe_error_text(r.json())
        fallback = await sqlite_client.post(f"/api/v1/agent-chat/{sid}",
                                            json={"query": "q", "agent_enabled": False})
        assert fallback.status_code == 200
        assert parse_sse(fallback.content).types[0] == "agent_query"


class TestFrontendKnowledgePage:
    async def test_kb_made_with_the_listed_models_is_usable_for_chat(
            self, sqlite_container: Any, sqlite_client: httpx.AsyncClient) -> None:
        """The UI's KB form offers the ids GET /models lists; a KB saved with them must index and answer."""
        if not sqlite_container.jobs.started:
            await sqlite_container.jobs.start()
        http = sqlite_client
        models = (await http.get("/api/v1/models")).json()["data"]
        chat_id = next(m["id"] for m in models if m["type"] == "KnowledgeQA")
        embed_id = next(m["id"] for m in models if m["type"] == "Embedding")
        r = await http.post("/api/v1/knowledge-bases", json={
            "name": "UI KB", "description": "", "type": "document", "embedding_model_id": embed_id,
            "summary_model_id": chat_id, "chunking_config": {"chunk_size": 512, "chunk_overlap": 50,
                                                              "separators": ["\n\n", "\n"],
                                                              "enable_multimodal": False}})
        assert r.status_code == 201, r.text
        kb = r.json()["data"]
        assert kb["embedding_model_id"] == embed_id
        assert kb["summary_model_id"] == chat_id
        assert isinstance(kb["chunking_config"]["separators"], list)
        tags = await http.get(f"/api/v1/knowledge-bases/{kb['id']}/tags", params={"page": 1, "page_size": 50})
        assert tags.status_code == 200
        assert tags.json() == {"success": True, "data": {"total": 0, "page": 1, "page_size": 50, "data": []}}
        r = await http.put(f"/api/v1/knowledge-bases/{kb['id']}", json={
            "name": "UI KB 2", "description": "edited", "config": {
                "chunking_config": {"chunk_size": 400, "chunk_overlap": 40, "separators": ["\n"]}}})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["name"] == "UI KB 2"
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual", json={
            "title": "Tea", "content": "Oolong tea is partially oxidised before it is rolled and dried.",
            "status": "publish"})
        assert r.status_code == 200, r.text
        await sqlite_container.jobs.wait_idle(60)
        k = (await http.get(f"/api/v1/knowledge/{r.json()['data']['id']}")).json()["data"]
        assert k["parse_status"] == "completed", k.get("error_message")
        sid = (await http.post("/api/v1/sessions", json={})).json()["data"]["id"]
        r = await http.post(f"/api/v1/knowledge-chat/{sid}", json={
            "query": "How is oolong tea processed?", "knowledge_base_ids": [kb["id"]],
            "agent_id": "builtin-quick-answer", "summary_model_id": chat_id})
        stream = parse_sse(r.content)
        assert "error" not in stream.types, stream.of("error")
        assert "partially oxidised" in stream.answer()
