"""Issue 13 item 2: ``GET``/``PUT /initialization/config/:kbId`` — the second request of the web UI's
knowledge-base settings save — really changes the knowledge base, and refuses what it cannot do with a 400."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.conftest import client_for
from tests.fakes.model_server import FakeModelServer

pytestmark = pytest.mark.integration

API = "/api/v1"


def ui_body(**overrides: Any) -> dict[str, Any]:
    """What the settings modal sends (KnowledgeBaseEditorModal.vue, edit mode), defaults untouched."""
    body: dict[str, Any] = {
        "llmModelId": "builtin-chat", "embeddingModelId": "builtin-embedding",
        "vlm_config": {"enabled": False, "model_id": ""},
        "documentSplitting": {"chunkSize": 512, "chunkOverlap": 100,
                              "separators": ["\n\n", "\n", "。", "！", "？", ";", "；"],
                              "enableParentChild": False, "parentChunkSize": 4096, "childChunkSize": 384},
        "multimodal": {"enabled": False}, "storageProvider": "local",
        "indexingStrategy": {"vector_enabled": True, "keyword_enabled": True, "wiki_enabled": False,
                             "graph_enabled": False},
        "nodeExtract": {"enabled": False, "text": "", "tags": [], "nodes": [], "relations": []},
        "questionGeneration": {"enabled": False, "questionCount": 3},
    }
    body.update(overrides)
    return body


async def _kb(http: httpx.AsyncClient) -> str:
    r = await http.post(f"{API}/knowledge-bases", json={"name": "Handbook"})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


async def _chat_model(http: httpx.AsyncClient, fake: FakeModelServer) -> str:
    r = await http.post(f"{API}/models", json={"name": "fake-chat", "type": "KnowledgeQA", "source": "remote",
                                               "parameters": {"base_url": fake.base_url, "api_key": "k"}})
    assert r.status_code == 201, r.text
    return str(r.json()["data"]["id"])


class TestPutConfig:
    async def test_the_ui_save_changes_the_kb(self, store_client: httpx.AsyncClient,
                                              fake: FakeModelServer) -> None:
        http = store_client
        kb_id = await _kb(http)
        chat = await _chat_model(http, fake)
        # the modal's first request, then this one
        r = await http.put(f"{API}/knowledge-bases/{kb_id}", json={
            "name": "Handbook", "description": "", "config": {"indexing_strategy": {"vector_enabled": True}}})
        assert r.status_code == 200, r.text
        r = await http.put(f"{API}/initialization/config/{kb_id}", json=ui_body(
            llmModelId=chat,
            documentSplitting={"chunkSize": 700, "chunkOverlap": 0, "separators": ["\n", "."],
                               "enableParentChild": True, "parentChunkSize": 2048, "childChunkSize": 256,
                               "parserEngineRules": [{"file_types": ["pdf"], "engine": "builtin"},
                                                     {"file_types": ["md"], "engine": "md"}]},
            nodeExtract={"enabled": True, "text": "Ada wrote notes.", "tags": ["person"],
                         "nodes": [{"name": "Ada", "attributes": []}], "relations": []},
            questionGeneration={"enabled": True, "questionCount": 40}))
        assert r.status_code == 200, r.text
        assert r.json()["success"] is True
        kb = (await http.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        assert kb["summary_model_id"] == chat
        assert kb["embedding_model_id"] == "builtin-embedding"
        cfg = kb["chunking_config"]
        assert (cfg["chunk_size"], cfg["chunk_overlap"], cfg["separators"]) == (700, 0, ["\n", "."])
        assert (cfg["enable_parent_child"], cfg["parent_chunk_size"], cfg["child_chunk_size"]) == (True, 2048,
                                                                                                   256)
        assert cfg["parser_engine_rules"] == [{"file_types": ["pdf"], "engine": "builtin"},
                                              {"file_types": ["md"], "engine": "md"}]
        # the engine names GET /system/parser-engines lists are the ones a rule may name
        engines = (await http.get(f"{API}/system/parser-engines")).json()["data"]
        assert any(e["Name"] == "md" and "md" in e["FileTypes"] for e in engines)
        assert kb["config"]["chunking_config"]["chunk_size"] == 700
        assert kb["extract_config"]["enabled"] is True
        assert kb["extract_config"]["tags"] == ["person"]
        assert kb["question_generation_config"] == {"enabled": True, "question_count": 10}
        assert kb["storage_provider_config"] == {"provider": "local"}
        # GET answers what was saved, in WeKnora's shape
        data = (await http.get(f"{API}/initialization/config/{kb_id}")).json()["data"]
        assert data["hasFiles"] is False
        assert data["llm"] == {"source": "remote", "modelName": "fake-chat", "baseUrl": fake.base_url,
                               "credentials": {"apiKey": True}}
        assert data["embedding"]["credentials"] == {"apiKey": False}
        assert data["embedding"]["baseUrl"] == ""  # built in: the operator's address is not shown
        assert data["documentSplitting"] == {"chunkSize": 700, "chunkOverlap": 0, "separators": ["\n", "."]}
        assert data["rerank"]["enabled"] is False
        assert data["multimodal"] == {"enabled": False}
        assert data["nodeExtract"]["enabled"] is True
        assert data["questionGeneration"]["questionCount"] == 10

    async def test_absent_fields_leave_the_kb_alone(self, store_client: httpx.AsyncClient) -> None:
        kb_id = await _kb(store_client)
        before = (await store_client.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        r = await store_client.put(f"{API}/initialization/config/{kb_id}",
                                   json={"llmModelId": "builtin-chat"})
        assert r.status_code == 200, r.text
        after = (await store_client.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        assert after["chunking_config"] == before["chunking_config"]
        assert after["embedding_model_id"] == before["embedding_model_id"]

    @pytest.mark.parametrize("overrides", [
        {"llmModelId": "3f1c9a8e-0000-4000-8000-000000000000"},
        {"llmModelId": "builtin-embedding"},  # not a chat model
        {"embeddingModelId": "3f1c9a8e-0000-4000-8000-000000000000"},
        {"llmModelId": ""},
        {"llmModelId": None},
        {"documentSplitting": {"chunkSize": "big"}},
        {"documentSplitting": {"chunkSize": 10_000_000}},
        {"documentSplitting": {"chunkOverlap": -1}},
        {"documentSplitting": {"separators": "\n"}},
        {"documentSplitting": {"parserEngineRules": [{"file_types": ["pdf"], "engine": "mineru"}]}},
        {"documentSplitting": {"parserEngineRules": [{"file_types": ["md"], "engine": "pdf"}]}},
        {"documentSplitting": {"parserEngineRules": [{"file_types": ["dwg"], "engine": "dwg"}]}},
        {"documentSplitting": []},
        {"multimodal": {"enabled": True}, "vlm_config": {"enabled": True, "model_id": "x"}},
        {"asr_config": {"enabled": True, "model_id": "x"}},
        {"storageProvider": "cos"},
        {"storageBackendId": "elsewhere"},
        {"questionGeneration": {"enabled": True, "questionCount": "many"}},
    ])
    async def test_what_does_not_resolve_is_a_400(self, sqlite_client: httpx.AsyncClient,
                                                  overrides: dict[str, Any]) -> None:
        kb_id = await _kb(sqlite_client)
        before = (await sqlite_client.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        r = await sqlite_client.put(f"{API}/initialization/config/{kb_id}", json=ui_body(**overrides))
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["success"] is False
        assert body["error"]["message"]
        after = (await sqlite_client.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        assert after["summary_model_id"] == before["summary_model_id"]
        assert after["chunking_config"] == before["chunking_config"]

    async def test_the_embedding_model_is_fixed_once_documents_exist(self, sqlite_client: httpx.AsyncClient,
                                                                    fake: FakeModelServer) -> None:
        http = sqlite_client
        kb_id = await _kb(http)
        r = await http.post(f"{API}/models", json={"name": "other-embedder", "type": "Embedding",
                                                   "parameters": {"base_url": fake.base_url}})
        embed = r.json()["data"]["id"]
        r = await http.post(f"{API}/knowledge-bases/{kb_id}/knowledge/manual",
                            json={"title": "Note", "content": "Some words.", "status": "publish"})
        assert r.status_code == 200, r.text
        r = await http.put(f"{API}/initialization/config/{kb_id}", json=ui_body(embeddingModelId=embed))
        assert r.status_code == 400, r.text
        assert (await http.get(f"{API}/initialization/config/{kb_id}")).json()["data"]["hasFiles"] is True
        r = await http.put(f"{API}/initialization/config/{kb_id}", json=ui_body())  # unchanged: saved
        assert r.status_code == 200, r.text

    async def test_unknown_kbs_are_404(self, sqlite_client: httpx.AsyncClient) -> None:
        for kb_id in ("3f1c9a8e-0000-4000-8000-000000000000", "not-an-id"):
            for method in ("GET", "PUT"):
                r = await sqlite_client.request(method, f"{API}/initialization/config/{kb_id}",
                                                json=ui_body())
                assert r.status_code == 404, (method, kb_id, r.text)
                assert r.json()["success"] is False

    async def test_another_tenants_kb_is_404(self, sqlite_container: Any,
                                             sqlite_client: httpx.AsyncClient) -> None:
        from tests.conftest import client_for

        kb_id = await _kb(sqlite_client)
        await sqlite_container.tenants.create("other", "sk-other-tenant")
        async with client_for(sqlite_container, **{"X-API-Key": "sk-other-tenant"}) as other:
            assert (await other.get(f"{API}/initialization/config/{kb_id}")).status_code == 404
            r = await other.put(f"{API}/initialization/config/{kb_id}", json=ui_body())
            assert r.status_code == 404


def legacy_body(llm: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """What WeKnora's older save (``initializeSystemByKB``) sends: models by name and address."""
    body: dict[str, Any] = {
        "llm": llm, "embedding": {"source": "local", "modelName": ""},
        "rerank": {"enabled": False, "modelName": "", "baseUrl": ""},
        "multimodal": {"enabled": False},
        "documentSplitting": {"chunkSize": 600, "chunkOverlap": 60, "separators": ["\n\n", "\n"]},
        "nodeExtract": {"enabled": False, "text": "", "tags": [], "nodes": [], "relations": []},
    }
    body.update(overrides)
    return body


class TestLegacyInitialize:
    async def test_the_older_save_changes_the_kb_as_the_put_does(self, store_client: httpx.AsyncClient,
                                                                 fake: FakeModelServer) -> None:
        http = store_client
        kb_id = await _kb(http)
        remote = {"source": "remote", "modelName": "fake-chat", "baseUrl": fake.base_url, "apiKey": "k"}
        r = await http.post(f"{API}/initialization/initialize/{kb_id}", json=legacy_body(remote))
        assert r.status_code == 200, r.text
        data = r.json()["data"]
        added = data["models"][0]
        assert (added["name"], added["type"], added["credentials"]) == ("fake-chat", "KnowledgeQA",
                                                                         {"api_key": {"configured": True}})
        assert data["knowledge_base"]["summary_model_id"] == added["id"]
        cfg = (await http.get(f"{API}/initialization/config/{kb_id}")).json()["data"]
        assert cfg["llm"]["modelName"] == "fake-chat"
        assert cfg["documentSplitting"]["chunkSize"] == 600
        # saving again names the same model: it is found, not added twice
        again = await http.post(f"{API}/initialization/initialize/{kb_id}", json=legacy_body(remote))
        assert again.json()["data"]["models"][0]["id"] == added["id"]
        chats = [m for m in (await http.get(f"{API}/models")).json()["data"] if m["name"] == "fake-chat"]
        assert len(chats) == 1

    async def test_the_builtin_model_is_found_by_name(self, store_client: httpx.AsyncClient) -> None:
        http = store_client
        kb_id = await _kb(http)
        builtin = next(m for m in (await http.get(f"{API}/models")).json()["data"]
                       if m["id"] == "builtin-chat")
        r = await http.post(f"{API}/initialization/initialize/{kb_id}",
                            json=legacy_body({"source": builtin["source"], "modelName": builtin["name"]}))
        assert r.status_code == 200, r.text
        assert r.json()["data"]["knowledge_base"]["summary_model_id"] == "builtin-chat"

    async def test_refusals_add_no_model(self, store_client: httpx.AsyncClient,
                                         fake: FakeModelServer) -> None:
        http = store_client
        kb_id = await _kb(http)
        remote = {"source": "remote", "modelName": "fake-chat", "baseUrl": fake.base_url}
        for body in (legacy_body(remote, multimodal={"enabled": True}),
                     legacy_body(remote, documentSplitting={"chunkSize": "big"}),
                     legacy_body({"source": "remote", "modelName": ""}), {"llm": "fake-chat"}):
            r = await http.post(f"{API}/initialization/initialize/{kb_id}", json=body)
            assert r.status_code == 400, (body, r.text)
        assert not [m for m in (await http.get(f"{API}/models")).json()["data"] if m["name"] == "fake-chat"]
        missing = "00000000-0000-4000-8000-000000000000"
        assert (await http.post(f"{API}/initialization/initialize/{missing}",
                                json=legacy_body(remote))).status_code == 404

    async def test_another_tenants_kb_is_not_found(self, store_client: httpx.AsyncClient,
                                                   store_container: Services) -> None:
        kb_id = await _kb(store_client)
        _, key = await store_container.tenants.create("other")
        async with client_for(store_container, **{"X-API-Key": key}) as other:
            r = await other.post(f"{API}/initialization/initialize/{kb_id}",
                                 json=legacy_body({"source": "local", "modelName": "x"}))
            assert r.status_code == 404
            assert not [m for m in (await other.get(f"{API}/models")).json()["data"] if m["name"] == "x"]
