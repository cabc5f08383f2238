"""The model settings page through the real app (knora.api.routes.model_checks): the providers list and the
editor's "test connection" checks, each calling the fake model server through Knora's own clients under the
tenant outbound policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.root import Services
from knora.services.kb import model_checks
from knora.settings import Settings
from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer, Reply

pytestmark = pytest.mark.integration

REMOTE = "/api/v1/initialization/remote/check"
EMBED = "/api/v1/initialization/embedding/test"
RERANK = "/api/v1/initialization/rerank/check"


def _data(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True
    return body["data"]  # type: ignore[no-any-return]


def _auth(fake: FakeModelServer, path_end: str) -> list[str]:
    return [h.get("authorization", h.get("Authorization", "")) for (p, _), h in zip(fake.calls, fake.headers,
                                                                                     strict=True)
            if p.endswith(path_end)]


class TestProviders:
    async def test_lists_what_the_registries_take(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            got = _data(await http.get("/api/v1/models/providers"))
            by_name = {p["value"]: p for p in got}  # type: ignore[union-attr]
            assert by_name["openai"]["defaultUrls"]["chat"] == "https://api.openai.com/v1"
            assert by_name["openai"]["modelTypes"] == ["chat", "embedding"]
            assert "rerank" in by_name["jina"]["modelTypes"]
            assert by_name["jina"]["defaultUrls"]["rerank"] == "https://api.jina.ai/v1"
            assert by_name["ollama"]["defaultUrls"]["chat"] == "http://127.0.0.1:11434"
            assert "fake" not in by_name
            assert "remote" not in by_name
            rerank = _data(await http.get("/api/v1/models/providers", params={"model_type": "rerank"}))
            assert rerank
            assert all("rerank" in p["modelTypes"] for p in rerank)  # type: ignore[index]
            assert "openai" not in {p["value"] for p in rerank}  # type: ignore[index]
            _err(await http.get("/api/v1/models/providers", params={"model_type": "bogus"}), 400)


class TestChatCheck:
    async def test_a_working_model_and_a_failing_one(self, sqlite_container: Services,
                                                     fake: FakeModelServer) -> None:
        async with client_for(sqlite_container) as http:
            ok = _data(await http.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": fake.base_url,
                                                     "apiKey": "sk-typed", "provider": "openai"}))
            assert ok["available"] is True, ok
            assert fake.chat_requests[-1]["model"] == "fake-chat"
            assert _auth(fake, "/chat/completions")[-1] == "Bearer sk-typed"
            fake.script([Reply(status=401, error="bad key")])
            bad = _data(await http.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": fake.base_url}))
            assert bad["available"] is False
            assert "bad key" in bad["message"] or "401" in bad["message"]

    async def test_a_stored_key_is_used_for_the_tenants_own_row_only(self, sqlite_container: Services,
                                                                    fake: FakeModelServer) -> None:
        async with client_for(sqlite_container) as http:
            r = await http.post("/api/v1/models", json={
                "name": "fake-chat", "type": "KnowledgeQA", "source": "remote",
                "parameters": {"base_url": fake.base_url, "api_key": "sk-stored", "provider": "openai"}})
            assert r.status_code == 201, r.text
            row = r.json()["data"]["id"]
            got = _data(await http.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": fake.base_url,
                                                      "modelId": row}))
            assert got["available"] is True
            assert _auth(fake, "/chat/completions")[-1] == "Bearer sk-stored"
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _data(await other.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": fake.base_url,
                                                 "modelId": row}))
            assert _auth(fake, "/chat/completions")[-1] != "Bearer sk-stored"

    async def test_the_outbound_policy_refuses_before_connecting(self, make_settings: Callable[..., Settings],
                                                                fake: FakeModelServer) -> None:
        async with started(make_settings(outbound_allowed_hosts=[])) as c, client_for(c) as http:
            for url in (fake.base_url, "http://169.254.169.254/v1"):
                got = _data(await http.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": url}))
                assert got["available"] is False
                assert got["message"]
            assert fake.calls == []

    async def test_a_model_that_does_not_answer_in_time(self, sqlite_container: Services,
                                                       fake: FakeModelServer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(model_checks, "CHECK_TIMEOUT_SECONDS", 0.3)
        fake.script([Reply(content="late", delay=3)])
        async with client_for(sqlite_container) as http:
            got = _data(await http.post(REMOTE, json={"modelName": "fake-chat", "baseUrl": fake.base_url}))
            assert got["available"] is False
            assert got["message"]

    async def test_bad_bodies_are_4xx(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            for path in (REMOTE, EMBED, RERANK):
                _err(await http.post(path, json={}), 400)
                _err(await http.post(path, json={"modelName": 7}), 400)
                _err(await http.post(path, json={"modelName": "m", "baseUrl": ["x"]}), 400)
                _err(await http.post(path, content=b"{nope"), 400)
            _err(await http.post(EMBED, json={"modelName": "m", "dimension": "big"}), 400)
            unknown = _data(await http.post(REMOTE, json={"modelName": "m", "provider": "nosuch"}))
            assert unknown["available"] is False
            assert "nosuch" in unknown["message"]
            local = _data(await http.post(EMBED, json={"modelName": "no-such-local", "source": "local"}))
            assert local["available"] is False
            assert "no-such-local" in local["message"]


class TestEmbeddingAndRerankChecks:
    async def test_embedding(self, sqlite_container: Services, fake: FakeModelServer) -> None:
        async with client_for(sqlite_container) as http:
            got = _data(await http.post(EMBED, json={"source": "remote", "modelName": "fake-embed",
                                                     "baseUrl": fake.base_url, "apiKey": "k"}))
            assert got["available"] is True, got
            assert got["dimension"] == fake.embedding_dimension
            assert any(p.endswith("/embeddings") for p, _ in fake.calls)

    async def test_rerank(self, sqlite_container: Services, fake: FakeModelServer) -> None:
        async with client_for(sqlite_container) as http:
            got = _data(await http.post(RERANK, json={"modelName": "fake-rerank", "baseUrl": fake.base_url,
                                                      "provider": "jina"}))
            assert got["available"] is True, got
            fake.rerank_status = 500
            bad = _data(await http.post(RERANK, json={"modelName": "fake-rerank", "baseUrl": fake.base_url}))
            assert bad["available"] is False
            assert bad["message"]
