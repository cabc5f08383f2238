"""PUT /tenants/kv/retrieval-config through the real app (knora.api.routes.tenant_settings): validated,
stored per tenant, read back by the GET, and used by the tenant's searches."""

from __future__ import annotations

import pytest

from knora.root import Services
from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for

pytestmark = pytest.mark.integration

URL = "/api/v1/tenants/kv/retrieval-config"


class TestRetrievalConfig:
    async def test_put_is_stored_read_back_and_kept_per_tenant(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            body = {"embedding_top_k": 7, "vector_threshold": 0.4, "keyword_threshold": 0.2,
                    "rerank_top_k": 5, "rerank_threshold": 0.1, "rerank_model_id": "",
                    "feedback_retrieval_weight_enabled": False, "unknown_knob": 3}
            r = await http.put(URL, json=body)
            assert r.status_code == 200, r.text
            got = (await http.get(URL)).json()["data"]
            assert got == {k: v for k, v in body.items() if k != "unknown_knob"}
            # a later PUT changes what it names; null leaves a value as it was
            again = await http.put(URL, json={"embedding_top_k": 3, "vector_threshold": None})
            assert again.status_code == 200
            got = (await http.get(URL)).json()["data"]
            assert got["embedding_top_k"] == 3
            assert got["vector_threshold"] == 0.4
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            assert (await other.get(URL)).json()["data"] == {}

    async def test_bad_values_are_400_and_nothing_is_stored(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            for bad in ({"embedding_top_k": 0}, {"embedding_top_k": 2.5}, {"embedding_top_k": True},
                        {"embedding_top_k": "10"}, {"vector_threshold": 1.5}, {"rerank_threshold": "x"},
                        {"fusion": "nosuch"}, {"feedback_enabled": "yes"}, {"rerank_model_id": 5},
                        {"rerank_model_id": "00000000-0000-4000-8000-000000000000"}):
                _err(await http.put(URL, json={"rerank_top_k": 4, **bad}), 400)
            _err(await http.put(URL, content=b"[1]"), 400)
            _err(await http.put(URL, content=b"{"), 400)
            assert (await http.get(URL)).json()["data"] == {}

    async def test_rerank_model_must_be_the_tenants_own(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            r = await http.post("/api/v1/models", json={"name": "rr", "type": "Rerank", "source": "remote",
                                                        "parameters": {"base_url": "https://api.jina.ai/v1",
                                                                       "provider": "jina"}})
            assert r.status_code == 201, r.text
            rerank_id = r.json()["data"]["id"]
            assert (await http.put(URL, json={"rerank_model_id": rerank_id})).status_code == 200
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _err(await other.put(URL, json={"rerank_model_id": rerank_id}), 400)

    async def test_searches_use_it(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]
            for i in range(6):
                r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={
                    "title": f"Note {i}", "content": f"Penguins live in Antarctica, note {i}. " * 6})
                assert r.status_code == 200, r.text
            await sqlite_container.jobs.wait_idle(30)
            query = {"query": "penguins Antarctica", "knowledge_base_ids": [kb]}
            before = (await http.post("/api/v1/knowledge-search", json=query)).json()["data"]
            assert len(before) > 1
            assert (await http.put(URL, json={"embedding_top_k": 1, "rerank_top_k": 1})).status_code == 200
            after = (await http.post("/api/v1/knowledge-search", json=query)).json()["data"]
            assert len(after) == 1
