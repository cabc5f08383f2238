"""``/initialization/ollama/*``: the model settings page's Ollama checks, against a real (fake) Ollama on
loopback, one that is not there, and one the outbound policy refuses — never a 5xx, never a model pull."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest

from knora.settings import Settings
from tests.conftest import client_for, started
from tests.fakes.model_server import FakeModelServer

pytestmark = pytest.mark.integration


@asynccontextmanager
async def _client(make_settings: Callable[..., Settings], url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with started(make_settings(ollama_base_url=url)) as c, client_for(c) as http:
        yield http


@pytest.fixture
def ollama() -> Iterator[FakeModelServer]:
    with FakeModelServer(models=["qwen2.5:7b", "nomic-embed-text:latest"]) as server:
        yield server


async def test_a_running_ollama_is_listed_and_checked(make_settings: Callable[..., Settings],
                                                      ollama: FakeModelServer) -> None:
    async with _client(make_settings, ollama.base_url) as http:  # a /v1 suffix is Ollama's OpenAI API
        status = (await http.get("/api/v1/initialization/ollama/status")).json()["data"]
        assert status == {"available": True, "version": "0.0.0-fake", "baseUrl": ollama.root_url}
        models = (await http.get("/api/v1/initialization/ollama/models")).json()["data"]["models"]
        assert [m["name"] for m in models] == ["qwen2.5:7b", "nomic-embed-text:latest"]
        assert set(models[0]) == {"name", "size", "digest", "modified_at"}
        r = await http.post("/api/v1/initialization/ollama/models/check",
                            json={"models": ["qwen2.5:7b", "nomic-embed-text", "llama3"]})
        assert r.json()["data"] == {"models": {"qwen2.5:7b": True, "nomic-embed-text": True, "llama3": False}}

        have = await http.post("/api/v1/initialization/ollama/models/download",
                               json={"modelName": "qwen2.5:7b"})
        assert have.status_code == 200
        assert have.json()["data"] == {"modelName": "qwen2.5:7b", "status": "completed", "progress": 100.0}
        pull = await http.post("/api/v1/initialization/ollama/models/download", json={"modelName": "llama3"})
        assert pull.status_code == 400
        assert "ollama pull llama3" in pull.json()["error"]["message"]
        assert not [p for p, _ in ollama.calls if "pull" in p]  # nothing was asked to download
        assert (await http.get("/api/v1/initialization/ollama/download/tasks")).json()["data"] == []
        assert (await http.get("/api/v1/initialization/ollama/download/progress/abc")).status_code == 404

        for body in ({}, {"models": "qwen"}, {"models": [1]}):
            bad = await http.post("/api/v1/initialization/ollama/models/check", json=body)
            assert bad.status_code == 400, body
        assert (await http.post("/api/v1/initialization/ollama/models/download", json={})).status_code == 400


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "http://169.254.169.254"])
async def test_an_unreachable_or_refused_ollama_is_not_available(make_settings: Callable[..., Settings],
                                                                 url: str) -> None:
    async with _client(make_settings, url) as http:
        r = await http.get("/api/v1/initialization/ollama/status")
        assert r.status_code == 200
        data = r.json()["data"]
        assert data["available"] is False
        assert data["error"]
        assert data["baseUrl"] == url
        listed = await http.get("/api/v1/initialization/ollama/models")
        assert listed.status_code == 200
        assert listed.json()["data"]["models"] == []
        assert listed.json()["data"]["available"] is False
        check = await http.post("/api/v1/initialization/ollama/models/check", json={"models": ["qwen2.5"]})
        assert check.json()["data"] == {"models": {"qwen2.5": False}}
        pull = await http.post("/api/v1/initialization/ollama/models/download", json={"modelName": "qwen2.5"})
        assert pull.status_code == 400
        assert "not available" in pull.json()["error"]["message"]
