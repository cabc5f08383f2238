"""Sharing an agent with another tenant (issue 14): the receiving tenant lists it under ``GET /shared-agents``
and chats with it; the turn runs on what the owner lends with the agent — the knowledge bases it is bound to
(no other of the owner's), its models and their credentials — while the session stays the receiver's; revoking
the share ends it at the next turn."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.domain.access import Role
from knora.settings import Settings
from tests.api.test_shares import _parsed
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.sse import Stream, parse_sse

pytestmark = pytest.mark.timeout(120)
SECRET = "The harbour gate code is 4471 and it changes every spring."
PRIVATE = "The harbour vault password is swordfish-92, known to the harbour master only."


async def _doc(http: httpx.AsyncClient, kb_name: str, content: str) -> tuple[str, str]:
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": kb_name})).json()["data"]["id"]
    doc = (await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                           json={"title": kb_name, "content": content})).json()["data"]["id"]
    await _parsed(http, doc)
    return str(kb), str(doc)


async def _agent(http: httpx.AsyncClient, **config: Any) -> str:
    r = await http.post("/api/v1/agents", json={"name": "Harbour desk", "config": config})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def _ask(http: httpx.AsyncClient, key: str, agent_id: str, **body: Any) -> tuple[httpx.Response, str]:
    headers = {"X-API-Key": key}
    sid = (await http.post("/api/v1/sessions", json={}, headers=headers)).json()["data"]["id"]
    r = await http.post(f"/api/v1/agent-chat/{sid}", headers=headers, json={
        "query": "What is the harbour gate code and the vault password?", "agent_enabled": True,
        "agent_id": agent_id, **body})
    return r, str(sid)


async def _chat(http: httpx.AsyncClient, key: str, agent_id: str, **body: Any) -> tuple[Stream, str]:
    r, sid = await _ask(http, key, agent_id, **body)
    assert r.status_code == 200, r.text
    return parse_sse(r.content), sid


async def _refused(http: httpx.AsyncClient, key: str, agent_id: str, kb_id: str) -> None:
    """Agent mode with an agent the tenant may not use: 404, and no answer over the owner's knowledge."""
    r, _ = await _ask(http, key, agent_id, knowledge_base_ids=[kb_id])
    assert r.status_code == 404, r.text
    assert r.json()["error"]["message"] == "Agent not found"
    r, _ = await _ask(http, key, agent_id, knowledge_base_ids=[kb_id], agent_enabled=False)
    assert r.status_code == 200, r.text  # no agent mode: the tenant's own scope, which has none of it
    assert "4471" not in _cited(parse_sse(r.content))


def _cited(stream: Stream) -> str:
    refs = [f for f in stream.frames if f["response_type"] == "references"]
    return " ".join(str(r.get("content", "")) for f in refs for r in f["knowledge_references"])


async def test_a_shared_agent_answers_over_its_own_knowledge_only_until_revoked(
        make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        gate_kb, _ = await _doc(http, "gate", SECRET)
        vault_kb, vault_doc = await _doc(http, "vault", PRIVATE)
        agent_id = await _agent(http, agent_mode="quick-answer", kb_selection_mode="selected",
                                knowledge_bases=[gate_kb])
        other, _ = await c.tenants.create("neighbours")
        _v, viewer = await c.tenants.create_key(other.id, "their viewer", Role.VIEWER)
        _a, their_admin = await c.tenants.create_key(other.id, "their admin", Role.ADMIN)

        # not shared: the agent is not theirs to see, share or use
        as_viewer = {"X-API-Key": viewer}
        assert (await http.get(f"/api/v1/agents/{agent_id}", headers=as_viewer)).status_code == 404
        assert (await http.get("/api/v1/shared-agents", headers=as_viewer)).json()["data"] == []
        r = await http.post(f"/api/v1/agents/{agent_id}/shares", headers={"X-API-Key": their_admin},
                            json={"tenant_id": other.id})
        assert r.status_code == 404
        await _refused(http, viewer, agent_id, gate_kb)

        # what cannot be shared
        for body, status in (({"tenant_id": other.id, "permission": "edit"}, 400),
                             ({"tenant_id": c.default_tenant_id}, 400), ({"tenant_id": 987654}, 404)):
            r = await http.post(f"/api/v1/agents/{agent_id}/shares", json=body)
            assert r.status_code == status, (body, r.text)
        r = await http.post("/api/v1/agents/builtin-quick-answer/shares", json={"tenant_id": other.id})
        assert r.status_code == 400, r.text

        r = await http.post(f"/api/v1/agents/{agent_id}/shares", json={"tenant_id": other.id})
        assert r.status_code == 201, r.text
        share = r.json()["data"]
        assert (share["agent_id"], share["tenant_id"], share["permission"]) == (agent_id, other.id, "read")
        listed = (await http.get(f"/api/v1/agents/{agent_id}/shares")).json()["data"]
        assert [s["id"] for s in listed["shares"]] == [share["id"]]

        rows = (await http.get("/api/v1/shared-agents", headers=as_viewer)).json()["data"]
        assert [(x["agent"]["id"], x["share_id"], x["org_name"], x["source_tenant_id"], x["permission"])
                for x in rows] == [(agent_id, share["id"], "default", c.default_tenant_id, "read")]
        got = await http.get(f"/api/v1/agents/{agent_id}", headers=as_viewer)
        assert got.status_code == 200
        assert got.json()["data"]["name"] == "Harbour desk"
        r = await http.put(f"/api/v1/agents/{agent_id}", headers={"X-API-Key": their_admin},
                           json={"name": "ours now"})
        assert r.status_code == 404  # edited in its own tenant only
        r = await http.delete(f"/api/v1/agents/{agent_id}", headers={"X-API-Key": their_admin})
        assert r.status_code == 404

        # a viewer of the receiving tenant chats with it: the agent's knowledge base answers; naming the
        # owner's other knowledge base or one of its documents reaches nothing more
        for extra in ({}, {"knowledge_base_ids": [vault_kb]}, {"knowledge_base_ids": [gate_kb, vault_kb]},
                      {"knowledge_ids": [vault_doc]},
                      {"mentioned_items": [{"type": "kb", "id": vault_kb},
                                           {"type": "file", "id": vault_doc}]}):
            stream, sid = await _chat(http, viewer, agent_id, **extra)
            cited = _cited(stream)
            assert "4471" in cited, extra
            assert "swordfish" not in cited + stream.answer(), extra
        # the session and its messages are the receiver's, not the owner's
        msgs = (await http.get(f"/api/v1/messages/{sid}/load", headers=as_viewer)).json()["data"]
        assert [m["role"] for m in msgs] == ["user", "assistant"]
        assert (await http.get(f"/api/v1/sessions/{sid}")).status_code == 404

        r = await http.delete(f"/api/v1/agents/{agent_id}/shares/{share['id']}")
        assert r.status_code == 200
        assert (await http.get("/api/v1/shared-agents", headers=as_viewer)).json()["data"] == []
        assert (await http.get(f"/api/v1/agents/{agent_id}", headers=as_viewer)).status_code == 404
        await _refused(http, viewer, agent_id, gate_kb)  # at the next turn
        r = await http.delete(f"/api/v1/agents/{agent_id}/shares/{share['id']}")
        assert r.status_code == 404

        log = (await http.get(f"/api/v1/tenants/{c.default_tenant_id}/audit-log")).json()["data"]["items"]
        shared = [e for e in log if e["action"] in ("POST /api/v1/agents/{agent_id}/shares",
                                                    "DELETE /api/v1/agents/{agent_id}/shares/{share_id}")]
        assert len(shared) == 2
        assert all(agent_id in e["target"] for e in shared)


async def test_an_agent_over_all_knowledge_bases_lends_the_owners_own_only(
        make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        await _doc(http, "gate", SECRET)
        agent_id = await _agent(http, agent_mode="quick-answer", kb_selection_mode="all")
        other, _ = await c.tenants.create("neighbours")
        _k, theirs = await c.tenants.create_key(other.id, "their contributor", Role.CONTRIBUTOR)
        their_kb = (await http.post("/api/v1/knowledge-bases", json={"name": "their notes"},
                                    headers={"X-API-Key": theirs})).json()["data"]["id"]
        r = await http.post(f"/api/v1/agents/{agent_id}/shares", json={"tenant_id": other.id})
        assert r.status_code == 201, r.text
        stream, _ = await _chat(http, theirs, agent_id, knowledge_base_ids=[their_kb])
        assert "4471" in _cited(stream)

        # the OpenAI-compatible API lists it among the receiver's models and answers through it
        as_them = {"X-API-Key": theirs}  # the client's default key is the owner's
        listed = {m["id"] for m in (await http.get("/v1/models", headers=as_them)).json()["data"]}
        assert f"knora:agent/{agent_id}" in listed
        r = await http.post("/v1/chat/completions", headers=as_them, json={
            "model": f"knora:agent/{agent_id}",
            "messages": [{"role": "user", "content": "What is the harbour gate code?"}]})
        assert r.status_code == 200, r.text
        assert "4471" in r.json()["choices"][0]["message"]["content"]
        r = await http.post(f"/api/v1/agents/{agent_id}/shares", json={"tenant_id": other.id})
        share_id = r.json()["data"]["id"]  # the same share, permission unchanged
        assert (await http.delete(f"/api/v1/agents/{agent_id}/shares/{share_id}")).status_code == 200
        r = await http.get(f"/v1/models/knora:agent/{agent_id}", headers=as_them)
        assert r.status_code == 404
        listed = {m["id"] for m in (await http.get("/v1/models", headers=as_them)).json()["data"]}
        assert f"knora:agent/{agent_id}" not in listed


async def test_a_shared_smart_agent_runs_on_the_owners_model_and_tools(
        make_settings: Callable[..., Settings], fake: FakeModelServer) -> None:
    """Smart reasoning: the owner's stored model (its key) plans; the knowledge tool searches the agent's
    knowledge base; the receiving tenant has no model of its own."""
    async with started(make_settings()) as c, client_for(c) as http:
        gate_kb, _ = await _doc(http, "gate", SECRET)
        await _doc(http, "vault", PRIVATE)
        r = await http.post("/api/v1/models", json={
            "name": "owner chat", "type": "KnowledgeQA", "source": "remote",
            "parameters": {"base_url": fake.base_url, "api_key": "owner-model-key", "provider": "openai",
                           "max_retries": 0}})
        assert r.status_code == 201, r.text
        model_id = r.json()["data"]["id"]
        agent_id = await _agent(http, agent_mode="smart-reasoning", model_id=model_id,
                                kb_selection_mode="selected", knowledge_bases=[gate_kb],
                                allowed_tools=["knowledge_search"])
        other, _ = await c.tenants.create("neighbours")
        _k, viewer = await c.tenants.create_key(other.id, "their viewer", Role.VIEWER)
        assert (await http.post(f"/api/v1/agents/{agent_id}/shares",
                                json={"tenant_id": other.id})).status_code == 201

        def reply(body: dict[str, Any]) -> Reply:
            if not body.get("tools"):
                return Reply(content="Gate code")  # a title
            results = [m["content"] for m in body.get("messages", []) if m["role"] == "tool"]
            if not results:
                return Reply(content="Checking.", tool_calls=[{
                    "name": "knowledge_search",
                    "arguments": json.dumps({"queries": ["harbour gate code", "vault password"]})}])
            handle = re.search(r'<chunk id="(c\d+)"', results[-1])
            return Reply(content=f'The code is 4471 <ref id="{handle.group(1) if handle else "c1"}"/>.')

        fake.handler = reply
        stream, _ = await _chat(http, viewer, agent_id)
        assert "complete" in stream.types, stream.types
        results = " ".join(str(x.get("output", x)) for x in stream.of("tool_result"))
        assert "4471" in results
        assert "swordfish" not in results
        assert "4471" in stream.answer()
        planned = [h for (p, b), h in zip(fake.calls, fake.headers, strict=True)
                   if p.endswith("/chat/completions") and b.get("tools")]
        assert planned
        assert all(h.get("authorization") == "Bearer owner-model-key" for h in planned)
