"""Issue 13 item 8: every model id a knowledge base or an agent holds resolves through the models API — on a
fresh install (the sample knowledge base, the built-in agents) and on every creation path — so WeKnora's web
UI never shows a knowledge base as "not initialized" or an agent without its model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import client_for, started

pytestmark = pytest.mark.integration

API = "/api/v1"
KB_MODEL_FIELDS = {"embedding_model_id": ("Embedding",), "summary_model_id": ("KnowledgeQA", "VLLM"),
                   "rerank_model_id": ("Rerank",)}
AGENT_MODEL_FIELDS = {"model_id": ("KnowledgeQA", "VLLM"), "rerank_model_id": ("Rerank",),
                      "vlm_model_id": ("VLLM",), "query_understand_model_id": ("KnowledgeQA", "VLLM")}


async def unresolved(http: httpx.AsyncClient) -> list[str]:
    """Each (owner, field, id) whose id ``GET /models`` does not list, or ``GET /models/:id`` does not answer
    with a model of the field's type."""
    listed = {m["id"]: m for m in (await http.get(f"{API}/models")).json()["data"]}
    held: list[tuple[str, str, str, tuple[str, ...]]] = []
    for kb in (await http.get(f"{API}/knowledge-bases")).json()["data"]:
        held += [(f"kb {kb['name']}", f, kb[f], types) for f, types in KB_MODEL_FIELDS.items() if kb[f]]
    for agent in (await http.get(f"{API}/agents")).json()["data"]:
        cfg = agent["config"]
        held += [(f"agent {agent['id']}", f, cfg[f], types) for f, types in AGENT_MODEL_FIELDS.items()
                 if cfg.get(f)]
    problems = []
    for owner, field, model_id, types in held:
        r = await http.get(f"{API}/models/{model_id}")
        one = r.json().get("data") if r.status_code == 200 else None
        if model_id not in listed or one is None or one["id"] != model_id or one["type"] not in types:
            problems.append(f"{owner}: {field}={model_id!r}")
    return problems


async def _sample_kb(http: httpx.AsyncClient) -> dict[str, Any]:
    for _ in range(500):  # the sample KB is created in the background at start
        kbs = (await http.get(f"{API}/knowledge-bases")).json()["data"]
        if kbs:
            return dict(kbs[0])
        await asyncio.sleep(0.02)
    raise AssertionError("the sample knowledge base was not created")


class TestFreshInstall:
    async def test_every_model_id_resolves(self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings(sample_kb=True)) as c, client_for(c) as http:
            kb = await _sample_kb(http)
            # what the web UI checks before a knowledge base is used (checkKnowledgeBaseInitialization)
            assert kb["summary_model_id"]
            assert kb["embedding_model_id"]
            agents = (await http.get(f"{API}/agents")).json()["data"]
            assert {a["id"] for a in agents} >= {"builtin-quick-answer", "builtin-smart-reasoning"}
            assert await unresolved(http) == []
            await c.jobs.wait_idle(60)


class TestCreationPaths:
    async def test_kbs_and_agents_made_through_the_api_resolve(self, store_client: httpx.AsyncClient,
                                                                store_container: Services) -> None:
        http = store_client
        for body in ({"name": "bare"},
                     {"name": "empty ids", "embedding_model_id": "", "summary_model_id": ""},
                     # the settings' embedder by its spec, as knowledge bases stored it before issue 13
                     {"name": "spec", "embedding_model_id": store_container.settings.embedder},
                     {"name": "faq", "type": "faq"}):
            r = await http.post(f"{API}/knowledge-bases", json=body)
            assert r.status_code == 201, r.text
        kb_id = (await http.post(f"{API}/knowledge-bases", json={"name": "via init"})).json()["data"]["id"]
        r = await http.put(f"{API}/initialization/config/{kb_id}", json={
            "llmModelId": "builtin-chat", "embeddingModelId": store_container.settings.embedder})
        assert r.status_code == 200, r.text
        r = await http.post(f"{API}/agents",
                            json={"name": "helper", "config": {"agent_mode": "quick-answer"}})
        assert r.status_code == 201, r.text
        for rerank in ("builtin-rerank", "local:e5-bm25"):  # the local rerank models, chosen by name
            r = await http.post(f"{API}/agents", json={"name": f"with {rerank}", "config": {
                "agent_mode": "smart-reasoning", "rerank_model_id": rerank}})
            assert r.status_code == 201, r.text
        assert await unresolved(http) == []

    async def test_a_kb_stored_with_the_embedder_spec_still_saves(self, store_client: httpx.AsyncClient,
                                                                    store_container: Services) -> None:
        """A knowledge base that stored the settings' embedder spec (before issue 13) and has documents takes
        the built-in id on its next save: the same embedder, so not refused as a change of model."""
        http = store_client
        kb_id = (await http.post(f"{API}/knowledge-bases", json={"name": "old"})).json()["data"]["id"]
        c = store_container
        kb = await c.kb_service.get(c.default_tenant_id, kb_id)
        await c.repos.kbs.update(kb.model_copy(update={"embedding_model_id": c.settings.embedder,
                                                       "summary_model_id": ""}))
        shown = (await http.get(f"{API}/knowledge-bases/{kb_id}")).json()["data"]
        assert shown["embedding_model_id"] == "builtin-embedding"  # shown by its listed id before a save
        r = await http.post(f"{API}/knowledge-bases/{kb_id}/knowledge/manual",
                            json={"title": "Note", "content": "Some words.", "status": "publish"})
        assert r.status_code == 200, r.text
        r = await http.put(f"{API}/initialization/config/{kb_id}", json={
            "llmModelId": "builtin-chat", "embeddingModelId": store_container.settings.embedder})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["embedding_model_id"] == "builtin-embedding"
        assert await unresolved(http) == []
