"""``POST /knowledge-bases/:id/rebuild-index`` through the real app (knora.services.kb.rebuild), on SQLite and
PostgreSQL metadata: a lost index comes back from the stored chunks (searched through the real route), rows
of chunks that no longer exist leave it, and the answer carries the ``documentCount`` WeKnora's UI reads."""

from __future__ import annotations

import pytest

from knora.domain.search import IndexRow
from knora.ports.retrieval import StoredRows
from knora.root import Services
from tests.api.test_kb_copy import MISSING, TEXT, _err, _hits, _kb, _manual
from tests.conftest import client_for

pytestmark = pytest.mark.integration

QUERY = "quokka Rottnest Island"


class TestRebuildIndex:
    async def test_index_is_rebuilt_from_the_chunks(self, search_container: Services) -> None:
        engine = search_container.retrieval
        assert isinstance(engine, StoredRows)
        async with client_for(search_container) as http:
            kb = await _kb(http, "Fauna")
            k = await _manual(http, kb, "Quokka", TEXT)
            await search_container.jobs.wait_idle(30)
            before = await engine.rows_for_knowledge([k["id"]])
            assert before
            await search_container.retrieval.delete_knowledge([k["id"]])  # the index is lost
            stale = IndexRow(source_id="gone", chunk_id="gone", knowledge_id=k["id"], knowledge_base_id=kb,
                             tenant_id=before[0].tenant_id, content="stale wombat text")
            await search_container.retrieval.index([stale])
            assert not await _hits(http, kb, QUERY)

            r = await http.post(f"/api/v1/knowledge-bases/{kb}/rebuild-index", json={})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["documentCount"] == 1
            assert body["data"]["document_count"] == 1
            assert body["data"]["knowledge_base_id"] == kb
            await search_container.jobs.wait_idle(30)
            hits = await _hits(http, kb, QUERY)
            assert hits
            assert {h["knowledge_id"] for h in hits} == {k["id"]}
            after = await engine.rows_for_knowledge([k["id"]])
            assert sorted(r.source_id for r in after) == sorted(r.source_id for r in before)
            by_id = {r.source_id: r.embedding for r in before}
            for row in after:
                assert row.embedding == pytest.approx(by_id[row.source_id], abs=1e-5)

    async def test_bad_input_and_other_tenants(self, search_container: Services) -> None:
        async with client_for(search_container) as http:
            kb = await _kb(http, "Mine")
            faq = (await http.post("/api/v1/knowledge-bases", json={"name": "FAQ", "type": "faq"})).json()
            _err(await http.post(f"/api/v1/knowledge-bases/{MISSING}/rebuild-index"), 404)
            _err(await http.post("/api/v1/knowledge-bases/nope/rebuild-index"), 404)
            _err(await http.post(f"/api/v1/knowledge-bases/{faq['data']['id']}/rebuild-index"), 400)
            empty = (await http.post(f"/api/v1/knowledge-bases/{kb}/rebuild-index")).json()
            assert empty["documentCount"] == 0
        _, key = await search_container.tenants.create("other")
        async with client_for(search_container, **{"X-API-Key": key}) as other:
            _err(await other.post(f"/api/v1/knowledge-bases/{kb}/rebuild-index"), 404)
