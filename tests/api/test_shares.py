"""Sharing a knowledge base with another tenant (issue 14): usable in search and chat by the receiving tenant,
listed by ``GET /shared-knowledge-bases``, read or edit, and gone at once when the share is revoked."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from knora.domain.access import Role
from knora.settings import Settings
from tests.conftest import TEST_API_KEY, client_for, started
from tests.services.streaming.sse import parse_sse

pytestmark = pytest.mark.timeout(120)
SECRET = "The harbour gate code is 4471 and it changes every spring."


async def _parsed(http: httpx.AsyncClient, kid: str) -> None:
    for _ in range(400):
        k = (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]
        if k["parse_status"] in ("completed", "failed"):
            assert k["parse_status"] == "completed", k
            return
        await asyncio.sleep(0.05)
    raise AssertionError("document not processed")


async def _search(http: httpx.AsyncClient, kb_id: str, headers: dict[str, str]) -> httpx.Response:
    return await http.post("/api/v1/knowledge-search", json={"query": "harbour gate code",
                                                              "knowledge_base_ids": [kb_id]}, headers=headers)


async def test_a_shared_knowledge_base_is_searched_and_chatted_over_then_revoked(
        make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "harbour"})).json()["data"]
        doc = (await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                               json={"title": "gate", "content": SECRET})).json()["data"]
        await _parsed(http, doc["id"])
        other, _ = await c.tenants.create("neighbours")
        _key, plain = await c.tenants.create_key(other.id, "neighbour", Role.CONTRIBUTOR)
        them = {"X-API-Key": plain}

        # not shared: nothing of it is visible to the other tenant
        r = await _search(http, kb["id"], them)
        assert r.status_code == 200
        assert r.json()["data"] == []
        assert (await http.get(f"/api/v1/knowledge-bases/{kb['id']}", headers=them)).status_code == 404
        assert (await http.get("/api/v1/shared-knowledge-bases", headers=them)).json()["data"] == []
        assert (await http.get(f"/api/v1/knowledge/{doc['id']}", headers=them)).status_code == 404
        assert (await http.get(f"/api/v1/chunks/{doc['id']}", headers=them)).status_code == 404
        _admin, their_admin = await c.tenants.create_key(other.id, "their admin", Role.ADMIN)
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/shares", headers={"X-API-Key": their_admin},
                            json={"tenant_id": other.id})
        assert r.status_code == 404  # not theirs to share

        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/shares", json={"tenant_id": other.id})
        assert r.status_code == 201, r.text
        share = r.json()["data"]
        assert share["permission"] == "read"
        shared = (await http.get("/api/v1/shared-knowledge-bases", headers=them)).json()["data"]
        assert [(s["id"], s["knowledge_base"]["id"], s["permission"], s["org_name"]) for s in shared] == [
            (kb["id"], kb["id"], "read", "default")]
        hits = (await _search(http, kb["id"], them)).json()["data"]
        assert any("4471" in h["content"] for h in hits)
        assert (await http.get(f"/api/v1/knowledge-bases/{kb['id']}", headers=them)).status_code == 200
        docs = (await http.get(f"/api/v1/knowledge-bases/{kb['id']}/knowledge", headers=them)).json()["data"]
        assert [d["id"] for d in docs] == [doc["id"]]
        # and opens one: the document, its chunks, its preview
        opened = await http.get(f"/api/v1/knowledge/{doc['id']}", headers=them)
        assert opened.status_code == 200, opened.text
        assert opened.json()["data"]["title"] == "gate"
        chunks = await http.get(f"/api/v1/chunks/{doc['id']}", headers=them)
        assert chunks.status_code == 200, chunks.text
        assert any("4471" in ch["content"] for ch in chunks.json()["data"])
        assert (await http.get(f"/api/v1/knowledge/{doc['id']}/preview", headers=them)).status_code == 200
        for method, path in (("PUT", f"/knowledge/{doc['id']}"), ("DELETE", f"/knowledge/{doc['id']}"),
                             ("POST", f"/knowledge/{doc['id']}/reparse"), ("DELETE", f"/chunks/{doc['id']}")):
            r = await http.request(method, f"/api/v1{path}", headers=them, json={"title": "x"}
                                   if method == "PUT" else None)
            assert r.status_code == 404, (method, path, r.text)  # a read share changes nothing
        assert (await http.get(f"/api/v1/knowledge/{doc['id']}")).json()["data"]["title"] == "gate"
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual", headers=them,
                            json={"title": "theirs", "content": "not allowed"})
        assert r.status_code in (403, 404)  # a read share adds nothing
        r = await http.put(f"/api/v1/knowledge-bases/{kb['id']}", headers=them, json={"name": "renamed"})
        assert r.status_code == 404  # settings stay the owner's

        session = (await http.post("/api/v1/sessions", json={}, headers=them)).json()["data"]
        r = await http.post(f"/api/v1/knowledge-chat/{session['id']}", headers=them,
                            json={"query": "What is the harbour gate code?",
                                  "knowledge_base_ids": [kb["id"]]})
        assert r.status_code == 200, r.text
        stream = parse_sse(r.content)
        refs = [f for f in stream.frames if f["response_type"] == "references"]
        assert refs
        assert any("4471" in str(ref.get("content", "")) for ref in refs[0]["knowledge_references"])

        r = await http.delete(f"/api/v1/knowledge-bases/{kb['id']}/shares/{share['id']}")
        assert r.status_code == 200
        assert (await _search(http, kb["id"], them)).json()["data"] == []  # at once
        assert (await http.get(f"/api/v1/knowledge-bases/{kb['id']}", headers=them)).status_code == 404
        assert (await http.get("/api/v1/shared-knowledge-bases", headers=them)).json()["data"] == []
        assert (await http.get(f"/api/v1/knowledge/{doc['id']}", headers=them)).status_code == 404
        assert (await http.get(f"/api/v1/chunks/{doc['id']}", headers=them)).status_code == 404


async def test_an_edit_share_lets_the_other_tenant_add_documents(make_settings: Callable[..., Settings]
                                                                 ) -> None:
    async with started(make_settings()) as c, client_for(c) as http:
        kb = (await http.post("/api/v1/knowledge-bases", json={"name": "shared notes"})).json()["data"]
        other, _ = await c.tenants.create("team b")
        _k, contributor = await c.tenants.create_key(other.id, "b contributor", Role.CONTRIBUTOR)
        _v, viewer = await c.tenants.create_key(other.id, "b viewer", Role.VIEWER)
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/shares",
                            json={"tenant_id": other.id, "permission": "edit"})
        assert r.status_code == 201, r.text
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                            headers={"X-API-Key": viewer}, json={"title": "v", "content": "viewer text"})
        assert r.status_code == 403  # the share does not lift the caller's own role
        r = await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                            headers={"X-API-Key": contributor}, json={"title": "b", "content": SECRET})
        assert r.status_code in (200, 201), r.text
        added = r.json()["data"]
        await _parsed(http, added["id"])
        docs = (await http.get(f"/api/v1/knowledge-bases/{kb['id']}/knowledge",
                               headers={"X-API-Key": TEST_API_KEY})).json()["data"]
        assert [d["id"] for d in docs] == [added["id"]]  # in the owner's knowledge base

        # an edit share also changes and deletes the knowledge base's documents (a viewer still may not)
        owners = (await http.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/manual",
                                  json={"title": "owner's", "content": "Owner text."})).json()["data"]
        await _parsed(http, owners["id"])
        r = await http.put(f"/api/v1/knowledge/{owners['id']}", headers={"X-API-Key": viewer},
                           json={"title": "viewer"})
        assert r.status_code == 403
        r = await http.put(f"/api/v1/knowledge/{owners['id']}", headers={"X-API-Key": contributor},
                           json={"title": "renamed by b"})
        assert r.status_code == 200, r.text
        assert (await http.get(f"/api/v1/knowledge/{owners['id']}")).json()["data"]["title"] == "renamed by b"
        r = await http.delete(f"/api/v1/knowledge/{owners['id']}", headers={"X-API-Key": contributor})
        assert r.status_code == 200, r.text
        assert (await http.get(f"/api/v1/knowledge/{owners['id']}")).status_code == 404
        # a document of another of the owner's knowledge bases, not shared, stays out of reach
        private = (await http.post("/api/v1/knowledge-bases", json={"name": "private"})).json()["data"]
        secret = (await http.post(f"/api/v1/knowledge-bases/{private['id']}/knowledge/manual",
                                  json={"title": "p", "content": "Private text."})).json()["data"]
        for method in ("GET", "DELETE"):
            r = await http.request(method, f"/api/v1/knowledge/{secret['id']}",
                                   headers={"X-API-Key": contributor})
            assert r.status_code == 404, (method, r.text)
        assert (await http.get(f"/api/v1/knowledge/{secret['id']}")).status_code == 200
        log = (await http.get(f"/api/v1/tenants/{c.default_tenant_id}/audit-log")).json()["data"]["items"]
        assert any(e["action"].endswith("/shares") for e in log)
