"""Model rows are refused at save when their client could not work: a provider that needs an address and has
none it may use (issue #20)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.conftest import client_for, started

pytestmark = pytest.mark.integration


def _missing_url(r: httpx.Response) -> str:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["success"] is False
    message = str(body["error"]["message"])
    assert "parameters.base_url is required" in message
    return message


def _row(type_: str, **params: Any) -> dict[str, Any]:
    return {"name": "m", "type": type_, "parameters": params}


class TestMissingBaseUrl:
    async def test_an_ollama_embedding_row_without_a_url_is_refused_at_save(
            self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings(outbound_allowed_hosts=[])) as c, client_for(c) as http:
            message = _missing_url(await http.post("/api/v1/models",
                                                   json=_row("embedding", provider="ollama")))
            assert "127.0.0.1:11434" in message
            assert "not allowed" in message
            _missing_url(await http.post("/api/v1/models", json={"name": "ollama:nomic-embed-text",
                                                                  "type": "embedding"}))
            ok = await http.post("/api/v1/models", json=_row("embedding", provider="ollama",
                                                              base_url="https://93.184.215.14"))
            assert ok.status_code == 201, ok.text
            row = ok.json()["data"]["id"]
            _missing_url(await http.put(f"/api/v1/models/{row}", json={"parameters": {"base_url": ""}}))
            assert (await c.repos.models.get(1, row)) is not None
            assert [m.id for m in await c.repos.models.list(1)] == [row]

    async def test_the_loopback_default_is_accepted_where_the_policy_allows_it(
            self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings()) as c, client_for(c) as http:  # loopback allow-listed
            r = await http.post("/api/v1/models", json=_row("embedding", provider="ollama"))
            assert r.status_code == 201, r.text

    async def test_an_embedding_row_without_a_url_uses_the_operators(
            self, make_settings: Callable[..., Settings]) -> None:
        settings = make_settings(outbound_allowed_hosts=[], embedder_base_url="http://127.0.0.1:9/api")
        async with started(settings) as c, client_for(c) as http:
            r = await http.post("/api/v1/models", json=_row("embedding", provider="ollama"))
            assert r.status_code == 201, r.text

    async def test_a_rerank_provider_without_an_address_of_its_own_needs_one(
            self, make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings()) as c, client_for(c) as http:
            for provider in ("tei", "vllm", "xinference"):
                message = _missing_url(await http.post("/api/v1/models",
                                                       json=_row("rerank", provider=provider)))
                assert repr(provider) in message
            for provider in ("jina", "cohere"):  # a public default
                r = await http.post("/api/v1/models", json=_row("rerank", provider=provider))
                assert r.status_code == 201, r.text
            chat = (await http.post("/api/v1/models", json=_row("chat", provider="openai"))).json()["data"]
            _missing_url(await http.put(f"/api/v1/models/{chat['id']}",
                                        json={"type": "rerank", "parameters": {"provider": "tei"}}))
            r = await http.post("/api/v1/models", json=_row("rerank", provider="tei", base_url="http://127.0.0.1:9"))
            assert r.status_code == 201, r.text
