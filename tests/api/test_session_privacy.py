"""A signed-in user's chat sessions are theirs alone: another member of the tenant — an admin, the owner's
API key included — neither lists, reads, chats in, deletes nor searches them; sessions made with an API key
are the tenant's, seen by every member; the agent's conversation search reads the session owner's only."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from knora.domain.access import Role
from knora.root import Services
from knora.settings import Settings
from tests.conftest import client_for, started
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.timeout(120)


async def _member(c: Services, http: httpx.AsyncClient, name: str, role: Role) -> dict[str, str]:
    user = await c.accounts.register(name, f"{name}@example.com", f"{name}-password")
    await c.members.enrol(c.default_tenant_id, user.id, role, by="test")
    r = await http.post("/api/v1/auth/login", headers={"X-API-Key": ""},
                        json={"email": f"{name}@example.com", "password": f"{name}-password"})
    assert r.status_code == 200, r.text
    return {"X-API-Key": "", "Authorization": f"Bearer {r.json()['token']}",
            "X-Tenant-ID": str(c.default_tenant_id)}


async def _session_with_a_turn(http: httpx.AsyncClient, headers: dict[str, str], query: str) -> str:
    sid = (await http.post("/api/v1/sessions", json={"title": query}, headers=headers)).json()["data"]["id"]
    r = await http.post(f"/api/v1/knowledge-chat/{sid}", headers=headers, json={"query": query})
    assert r.status_code == 200, r.text
    assert "complete" in parse_sse(r.content).types
    return str(sid)


async def test_a_users_sessions_are_private_and_the_tenants_are_shared(
        make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        alice = await _member(c, http, "alice", Role.CONTRIBUTOR)
        bob = await _member(c, http, "bob", Role.ADMIN)
        mine = await _session_with_a_turn(http, alice, "alice asks about the zebra budget")
        tenants = await _session_with_a_turn(http, {}, "a key asks about the zebra budget")  # the owner key

        def ids(r: httpx.Response) -> set[str]:
            assert r.status_code == 200, r.text
            return {s["id"] for s in r.json()["data"]}

        assert ids(await http.get("/api/v1/sessions", headers=alice)) == {mine, tenants}
        assert ids(await http.get("/api/v1/sessions", headers=bob)) == {tenants}
        assert ids(await http.get("/api/v1/sessions")) == {tenants}  # a key: the tenant's sessions only
        got = (await http.get(f"/api/v1/sessions/{mine}", headers=alice)).json()["data"]
        assert got["user_id"] not in ("", f"system-{c.default_tenant_id}")  # alice's

        # to anyone else the session does not exist: not readable, not writable, no chat in it
        for who in (bob, {}):
            for method, path, body in (
                    ("GET", f"/sessions/{mine}", None), ("GET", f"/messages/{mine}/load", None),
                    ("PUT", f"/sessions/{mine}", {"title": "mine now"}),
                    ("DELETE", f"/sessions/{mine}", None),
                    ("POST", f"/knowledge-chat/{mine}", {"query": "hello"}),
                    ("POST", f"/sessions/{mine}/stop", {"message_id": "x"})):
                r = await http.request(method, f"/api/v1{path}", headers=who, json=body)
                assert r.status_code == 404, (method, path, r.text)
            r = await http.post("/api/v1/messages/search", headers=who, json={"query": "zebra"})
            assert {i["session_id"] for i in r.json()["data"]["items"]} == {tenants}
            r = await http.request("DELETE", "/api/v1/sessions/batch", headers=who, json={"ids": [mine]})
            assert r.status_code == 200, r.text
        r = await http.request("DELETE", "/api/v1/sessions/batch", headers=bob, json={"delete_all": True})
        assert r.status_code == 200, r.text

        # still there for alice, with both messages; the tenant's session went with bob's delete_all
        assert ids(await http.get("/api/v1/sessions", headers=alice)) == {mine}
        msgs = (await http.get(f"/api/v1/messages/{mine}/load", headers=alice)).json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        r = await http.post("/api/v1/messages/search", headers=alice, json={"query": "zebra"})
        assert {i["session_id"] for i in r.json()["data"]["items"]} == {mine}


async def test_the_conversation_tool_reads_the_session_owners_history_only(
        make_settings: Callable[..., Settings]) -> None:
    from knora.adapters.tools.search_conversations import SearchConversationsTool
    from knora.ports.tool import ToolContext, ToolDeps

    async with started(make_settings()) as c, client_for(c) as http:
        alice = await _member(c, http, "alice", Role.VIEWER)
        bob = await _member(c, http, "bob", Role.VIEWER)
        await _session_with_a_turn(http, alice, "alice asks about the zebra budget")
        await _session_with_a_turn(http, bob, "bob asks about the zebra budget")
        await _session_with_a_turn(http, {}, "a key asks about the zebra budget")
        listed = (await http.get("/api/v1/sessions", headers=bob)).json()["data"]
        bob_id = next(s["user_id"] for s in listed if s["title"].startswith("bob"))
        tool = SearchConversationsTool(ToolDeps(conversations=c.session_service))

        async def questions(owner: str) -> set[str]:
            result = await tool.execute({"query": "zebra budget"}, ToolContext(
                tenant_id=c.default_tenant_id, session_id="another", session_user_id=owner))
            return {h["question"] for h in result.data["results"]}

        assert await questions(bob_id) == {"bob asks about the zebra budget",
                                           "a key asks about the zebra budget"}
        assert await questions("") == {"a key asks about the zebra budget"}
