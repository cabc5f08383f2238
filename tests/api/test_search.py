"""The search API over HTTP (in-process ASGI), on the embedded profile."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow, TagRow, TenantRow
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase, ParseStatus, Tag
from knora.domain.search import IndexRow

pytestmark = pytest.mark.integration

DOCS = {
    "Rivers": ["The Amazon river carries more water than any other river.",
               "The Nile flows north through Egypt into the Mediterranean."],
    "Space": ["Mars has two small moons named Phobos and Deimos.",
              "火星有两颗小卫星，分别叫火卫一和火卫二。"],
}


async def seed_kb(c: Any, name: str, tenant_id: int | None = None, tag: bool = False) -> dict[str, Any]:
    tenant = tenant_id or c.default_tenant_id
    kb = KnowledgeBase(tenant_id=tenant, name=name)
    out: dict[str, Any] = {"kb": kb, "docs": {}, "tag": None}
    async with c.sessions.begin() as s:
        s.add(to_row(KnowledgeBaseRow, kb))
        if tag:
            out["tag"] = Tag(tenant_id=tenant, knowledge_base_id=kb.id, name="space")
            s.add(to_row(TagRow, out["tag"]))
    embedder = c.embedders.default
    for title, texts in DOCS.items():
        tag_id = out["tag"].id if out["tag"] is not None and title == "Space" else None
        k = Knowledge(tenant_id=tenant, knowledge_base_id=kb.id, title=title,
                      parse_status=ParseStatus.COMPLETED,
                      tag_id=tag_id)
        chunks = [Chunk(tenant_id=tenant, knowledge_base_id=kb.id, knowledge_id=k.id, content=t,
                        chunk_index=i,
                        tag_id=tag_id) for i, t in enumerate(texts)]
        async with c.sessions.begin() as s:
            s.add(to_row(KnowledgeRow, k))
            await s.flush()
            for ch in chunks:
                s.add(to_row(ChunkRow, ch))
        contents = [ch.index_content(title) for ch in chunks]
        vecs = await embedder.embed_passages(contents)
        await c.retrieval.index([IndexRow(source_id=ch.id, chunk_id=ch.id, knowledge_id=k.id,
                                          knowledge_base_id=kb.id,
                                          tenant_id=tenant, content=t, embedding=vecs[i].tolist(),
                                          tag_id=tag_id)
                                 for i, (ch, t) in enumerate(zip(chunks, contents, strict=True))])
        out["docs"][title] = (k, chunks)
    return out


async def other_tenant(c: Any) -> int:
    async with c.sessions.begin() as s:
        row = TenantRow(name="other", retrieval_config={})
        s.add(row)
        await s.flush()
        return int(row.id)


class TestHybridSearchRoute:
    async def test_post_and_get_with_body(self, sqlite_client: httpx.AsyncClient,
                                          sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        url = f"/api/v1/knowledge-bases/{seeded['kb'].id}/hybrid-search"
        body = {"query_text": "Which river flows through Egypt?", "match_count": 3}
        r = await sqlite_client.post(url, json=body)
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["success"] is True
        top = data["data"][0]
        assert "Nile" in top["content"]
        assert top["knowledge_title"] == "Rivers"
        assert set(top["scores"]) >= {"fused"}
        assert "match_type" in top
        g = await sqlite_client.request("GET", url, content=r.request.content,
                                        headers={"content-type": "application/json"})
        assert g.status_code == 200
        assert g.json()["data"][0]["id"] == top["id"]

    @pytest.mark.parametrize(("body", "status"), [
        ({"query_text": ""}, 400),
        ({"query_text": "x" * 100_001}, 400),
        ({"query_text": "nile", "vector_threshold": 1.5}, 400),
        ({"query_text": "nile", "keyword_threshold": -0.2}, 400),
        ({"query_text": "nile", "match_count": "many"}, 400),
    ])
    async def test_bad_input(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any,
                             body: dict[str, Any],
                             status: int) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        r = await sqlite_client.post(f"/api/v1/knowledge-bases/{seeded['kb'].id}/hybrid-search", json=body)
        assert r.status_code == status
        assert r.json()["success"] is False
        assert r.json()["error"]["message"]

    async def test_malformed_json(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        r = await sqlite_client.post(f"/api/v1/knowledge-bases/{seeded['kb'].id}/hybrid-search",
                                     content=b"{nope",
                                     headers={"content-type": "application/json"})
        assert r.status_code == 400

    async def test_match_count_clamped(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        url = f"/api/v1/knowledge-bases/{seeded['kb'].id}/hybrid-search"
        for n in (0, 10_000):
            r = await sqlite_client.post(url, json={"query_text": "river moons", "match_count": n,
                                                    "vector_threshold": 0, "keyword_threshold": 0,
                                                    "skip_context_enrichment": True})
            assert r.status_code == 200
            assert len(r.json()["data"]) == 4

    async def test_foreign_and_unknown_kb(self, sqlite_client: httpx.AsyncClient,
                                          sqlite_container: Any) -> None:
        theirs = await seed_kb(sqlite_container, "theirs", tenant_id=await other_tenant(sqlite_container))
        for kb_id in (theirs["kb"].id, "00000000-0000-0000-0000-000000000000"):
            r = await sqlite_client.post(f"/api/v1/knowledge-bases/{kb_id}/hybrid-search",
                                         json={"query_text": "nile"})
            assert r.status_code == 404
            assert r.json()["error"]["message"] == "knowledge base not found"

    async def test_requires_api_key(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        r = await sqlite_client.post(f"/api/v1/knowledge-bases/{seeded['kb'].id}/hybrid-search",
                                     json={"query_text": "nile"}, headers={"X-API-Key": "wrong"})
        assert r.status_code == 401


class TestKnowledgeSearchRoute:
    async def test_by_kb(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        r = await sqlite_client.post("/api/v1/knowledge-search",
                                     json={"query": "moons of Mars", "knowledge_base_id": seeded["kb"].id})
        assert r.status_code == 200, r.text
        assert "Phobos" in r.json()["data"][0]["content"]

    async def test_chinese_query(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo")
        r = await sqlite_client.post("/api/v1/knowledge-search",
                                     json={"query": "火星的卫星", "knowledge_base_ids": [seeded["kb"].id]})
        assert r.status_code == 200
        assert r.json()["data"][0]["content"].startswith("火星")

    async def test_by_document_and_tag(self, sqlite_client: httpx.AsyncClient, sqlite_container: Any) -> None:
        seeded = await seed_kb(sqlite_container, "geo", tag=True)
        rivers, _ = seeded["docs"]["Rivers"]
        r = await sqlite_client.post("/api/v1/knowledge-search", json={"query": "moons",
                                                                       "knowledge_ids": [rivers.id]})
        assert r.status_code == 200
        assert {x["knowledge_id"] for x in r.json()["data"]} <= {rivers.id}
        assert r.json()["data"]  # explicit scope: recall thresholds off, the best chunk still comes back
        r = await sqlite_client.post("/api/v1/knowledge-search", json={"query": "river",
                                                                       "tag_ids": [seeded["tag"].id]})
        assert r.status_code == 200
        space, _ = seeded["docs"]["Space"]
        assert r.json()["data"]
        assert {x["knowledge_id"] for x in r.json()["data"]} == {space.id}

    async def test_needs_a_scope_and_a_query(self, sqlite_client: httpx.AsyncClient) -> None:
        assert (await sqlite_client.post("/api/v1/knowledge-search", json={"query": "x"})).status_code == 400
        r = await sqlite_client.post("/api/v1/knowledge-search", json={"query": " ",
                                                                       "knowledge_base_id": "a"})
        assert r.status_code == 400

    async def test_foreign_scope_is_empty(self, sqlite_client: httpx.AsyncClient,
                                          sqlite_container: Any) -> None:
        theirs = await seed_kb(sqlite_container, "theirs", tenant_id=await other_tenant(sqlite_container))
        r = await sqlite_client.post("/api/v1/knowledge-search", json={"query": "nile",
                                                                       "knowledge_base_id": theirs["kb"].id})
        assert r.status_code == 200
        assert r.json()["data"] == []
