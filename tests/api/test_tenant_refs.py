"""Issue 20 item 4b: every model, knowledge-base and MCP-service id a request names is resolved within the
caller's tenant — on create/update (400 "model not found") and on use (a foreign row is never called)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.adapters.llm.registry import ChatModelRegistry, ModelNotConfigured, RerankerRegistry
from knora.domain.knowledge import KnowledgeBase
from knora.domain.models import ModelConfig
from knora.services.ingest.embedders import EmbeddingModelNotFound
from knora.settings import Settings
from tests.conftest import client_for
from tests.fakes.model_server import FakeModelServer
from tests.polling import eventually

pytestmark = pytest.mark.integration



def _ok(r: httpx.Response) -> Any:
    assert r.status_code in (200, 201), r.text
    return r.json()["data"]


def _not_found(r: httpx.Response, field: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False
    assert field in body["error"]["message"]
    assert "not found" in body["error"]["message"]


async def _model(http: httpx.AsyncClient, fake: FakeModelServer, type_: str, name: str) -> str:
    return str(_ok(await http.post("/api/v1/models", json={
        "name": name, "type": type_, "source": "remote",
        "parameters": {"base_url": fake.base_url, "api_key": "sk-tenant-a", "provider": "openai",
                       "dimension": 64}}))["id"])


def _embedding_calls(fake: FakeModelServer) -> int:
    return sum(1 for path, _ in fake.calls if path.endswith("/embeddings"))


class TestCreateAndUpdate:
    async def test_another_tenants_models_are_not_found(self, lite_container: Any,
                                                        lite_client: httpx.AsyncClient,
                                                        fake: FakeModelServer) -> None:
        embed = await _model(lite_client, fake, "embedding", "fake-embed")
        chat = await _model(lite_client, fake, "chat", "fake-chat")
        rerank = await _model(lite_client, fake, "rerank", "fake-rerank")
        own = _ok(await lite_client.post("/api/v1/knowledge-bases", json={
            "name": "A", "embedding_model_id": embed, "summary_model_id": chat, "rerank_model_id": rerank}))
        assert own["embedding_model_id"] == embed
        _, key = await lite_container.tenants.create("other")
        async with client_for(lite_container, **{"X-API-Key": key}) as b:
            for field, value in (("embedding_model_id", embed), ("summary_model_id", chat),
                                 ("rerank_model_id", rerank),
                                 ("embedding_model_id", "00000000-0000-4000-8000-000000000000")):
                _not_found(await b.post("/api/v1/knowledge-bases", json={"name": "B", field: value}), field)
            mine = _ok(await b.post("/api/v1/knowledge-bases", json={
                "name": "B", "embedding_model_id": "builtin-embedding", "summary_model_id": "builtin-chat"}))
            for field, value in (("embedding_model_id", embed), ("summary_model_id", chat),
                                 ("rerank_model_id", rerank)):
                _not_found(await b.put(f"/api/v1/knowledge-bases/{mine['id']}", json={field: value}), field)
                _not_found(await b.put(f"/api/v1/knowledge-bases/{mine['id']}",
                                       json={"config": {field: value}}), field)
            kept = _ok(await b.get(f"/api/v1/knowledge-bases/{mine['id']}"))
            assert kept["summary_model_id"] == "builtin-chat"
        wrong_type = await lite_client.post("/api/v1/knowledge-bases", json={"name": "A2",
                                                                            "embedding_model_id": chat})
        assert wrong_type.status_code == 400
        assert "not Embedding" in wrong_type.json()["error"]["message"]
        assert fake.calls == []

    async def test_agents_name_only_their_tenants_models_kbs_and_mcp_services(
            self, lite_container: Any, lite_client: httpx.AsyncClient, fake: FakeModelServer) -> None:
        chat = await _model(lite_client, fake, "chat", "fake-chat")
        rerank = await _model(lite_client, fake, "rerank", "fake-rerank")
        kb = _ok(await lite_client.post("/api/v1/knowledge-bases", json={"name": "A"}))["id"]
        mcp = _ok(await lite_client.post("/api/v1/mcp-services", json={
            "name": "a", "transport_type": "http-streamable", "url": "https://mcp.example.com/mcp"}))["id"]
        own = _ok(await lite_client.post("/api/v1/agents", json={"name": "A's", "config": {
            "model_id": chat, "rerank_model_id": rerank, "knowledge_bases": [kb], "mcp_services": [mcp]}}))
        assert own["config"]["model_id"] == chat
        _, key = await lite_container.tenants.create("other")
        async with client_for(lite_container, **{"X-API-Key": key}) as b:
            for field, value in (("model_id", chat), ("rerank_model_id", rerank),
                                 ("query_understand_model_id", chat), ("vlm_model_id", chat),
                                 ("knowledge_bases", [kb]), ("mcp_services", [mcp])):
                r = await b.post("/api/v1/agents", json={"name": "B's", "config": {field: value}})
                _not_found(r, f"config.{field}")
            agent = _ok(await b.post("/api/v1/agents", json={"name": "B's",
                                                             "config": {"model_id": "builtin-chat"}}))
            for field, value in (("model_id", chat), ("knowledge_bases", [kb]), ("mcp_services", [mcp])):
                _not_found(await b.put(f"/api/v1/agents/{agent['id']}", json={"config": {field: value}}),
                           f"config.{field}")
                _not_found(await b.put("/api/v1/agents/builtin-quick-answer",
                                       json={"config": {field: value}}), f"config.{field}")
            assert _ok(await b.get(f"/api/v1/agents/{agent['id']}"))["config"]["model_id"] == "builtin-chat"


    async def test_ids_already_stored_are_not_checked_again(self, lite_client: httpx.AsyncClient,
                                                            fake: FakeModelServer) -> None:
        """The web UI sends the whole config back on every save: a knowledge base or model deleted since
        must not make the agent or knowledge base unsavable."""
        chat = await _model(lite_client, fake, "chat", "fake-chat")
        kb = _ok(await lite_client.post("/api/v1/knowledge-bases", json={"name": "A",
                                                                         "summary_model_id": chat}))
        gone = _ok(await lite_client.post("/api/v1/knowledge-bases", json={"name": "gone"}))["id"]
        agent = _ok(await lite_client.post("/api/v1/agents", json={"name": "x", "config": {
            "model_id": chat, "knowledge_bases": [kb["id"], gone]}}))
        assert (await lite_client.delete(f"/api/v1/knowledge-bases/{gone}")).status_code == 200
        assert (await lite_client.delete(f"/api/v1/models/{chat}")).status_code == 200
        saved = _ok(await lite_client.put(f"/api/v1/agents/{agent['id']}", json={
            "name": "renamed", "config": agent["config"]}))
        assert saved["name"] == "renamed"
        renamed = _ok(await lite_client.put(f"/api/v1/knowledge-bases/{kb['id']}", json={
            "name": "A2", "summary_model_id": chat}))
        assert renamed["name"] == "A2"
        _not_found(await lite_client.put(f"/api/v1/agents/{agent['id']}", json={
            "config": {"knowledge_bases": [kb["id"], gone, "00000000-0000-4000-8000-000000000000"]}}),
            "config.knowledge_bases")


class TestUse:
    async def test_a_stored_foreign_embedding_model_is_never_called(self, lite_container: Any,
                                                                    lite_client: httpx.AsyncClient,
                                                                    fake: FakeModelServer) -> None:
        """A knowledge base stored before the check (naming tenant A's model) ingests and searches without
        A's endpoint ever seeing B's text."""
        embed = await _model(lite_client, fake, "embedding", "fake-embed")
        other, key = await lite_container.tenants.create("other")
        kb = await lite_container.repos.kbs.create(KnowledgeBase(tenant_id=other.id, name="legacy",
                                                                 embedding_model_id=embed))
        async with client_for(lite_container, **{"X-API-Key": key}) as b:
            up = _ok(await b.post(f"/api/v1/knowledge-bases/{kb.id}/knowledge/file",
                                  files={"file": ("secret.md", b"# B's secret\n\nTenant B's private text.")}))

            async def settled() -> dict[str, Any] | None:
                doc: dict[str, Any] = _ok(await b.get(f"/api/v1/knowledge/{up['id']}"))
                return doc if doc["parse_status"] in ("completed", "failed") else None

            doc = await eventually(settled)
            assert doc is not None
            assert doc["parse_status"] == "failed"
            assert "embedding model" in doc["error_message"]
            assert "not found" in doc["error_message"]
            r = await b.post(f"/api/v1/knowledge-bases/{kb.id}/hybrid-search", json={"query_text": "secret"})
            assert r.status_code == 400, r.text
            assert r.json()["success"] is False
        assert _embedding_calls(fake) == 0

    async def test_own_embedding_model_is_used(self, lite_client: httpx.AsyncClient,
                                               fake: FakeModelServer) -> None:
        embed = await _model(lite_client, fake, "embedding", "fake-embed")
        kb = _ok(await lite_client.post("/api/v1/knowledge-bases", json={"name": "A",
                                                                         "embedding_model_id": embed}))
        up = _ok(await lite_client.post(f"/api/v1/knowledge-bases/{kb['id']}/knowledge/file",
                                        files={"file": ("a.md", b"# A\n\nTenant A's own text.")}))

        async def done() -> bool:
            doc = _ok(await lite_client.get(f"/api/v1/knowledge/{up['id']}"))
            return bool(doc["parse_status"] == "completed")

        assert await eventually(done)
        assert _embedding_calls(fake) >= 1


async def test_a_stored_embedding_row_is_read_through_for_its_own_tenant_only(lite_container: Any,
                                                                              fake: FakeModelServer) -> None:
    """A row written by another process (another replica, or before a restart) is used at once: the registry
    reads row ids through from the database instead of falling back to the default embedder (issue 16 item
    7); another tenant's knowledge base still cannot reach it."""
    other, _ = await lite_container.tenants.create("other")
    row = await lite_container.repos.models.create(ModelConfig(  # stored, not yet seen by the registry
        tenant_id=other.id, name="fake-embed", type="Embedding",
        parameters={"base_url": fake.base_url, "provider": "openai", "dimension": 64}))
    embedders = lite_container.embedders
    assert await embedders.get(row.id, tenant_id=other.id) is not embedders.default
    with pytest.raises(EmbeddingModelNotFound):
        await embedders.get(row.id, tenant_id=lite_container.default_tenant_id)


class _Rows:
    def __init__(self, *rows: ModelConfig) -> None:
        self.rows = {r.id: r for r in rows}

    async def get(self, tenant_id: int | None, model_id: str) -> ModelConfig | None:
        row = self.rows.get(model_id)
        return row if row is not None and (tenant_id is None or row.tenant_id == tenant_id) else None

    async def list(self, tenant_id: int, *, type: str | None = None) -> list[ModelConfig]:
        return [r for r in self.rows.values() if r.tenant_id == tenant_id and (not type or r.type == type)]


async def test_chat_and_rerank_registries_resolve_rows_only_for_their_tenant(
        make_settings: Callable[..., Settings]) -> None:
    chat = ModelConfig(tenant_id=1, name="gpt", type="KnowledgeQA", parameters={"base_url": "https://a.example"})
    rerank = ModelConfig(tenant_id=1, name="rr", type="Rerank", parameters={"base_url": "https://a.example"})
    rows = _Rows(chat, rerank)
    settings = make_settings()
    chats, rerankers = ChatModelRegistry(settings, rows), RerankerRegistry(settings, rows)
    assert (await chats.get(chat.id, tenant_id=1)).model_id == chat.id
    assert await rerankers.get(rerank.id, tenant_id=1) is not None
    for tenant in (2, None):
        with pytest.raises(ModelNotConfigured):
            await chats.get(chat.id, tenant_id=tenant)
        with pytest.raises(ModelNotConfigured):
            await rerankers.get(rerank.id, tenant_id=tenant)
    await chats.close()
    await rerankers.close()
