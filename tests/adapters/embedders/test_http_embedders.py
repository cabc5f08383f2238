"""OpenAI-compatible and Ollama embedders against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import openai
import pytest

from knora.adapters.embedders.ollama import OllamaEmbedder
from knora.adapters.embedders.openai import OpenAIEmbedder
from knora.adapters.embedders.registry import build_embedder
from knora.settings import Settings
from tests.adapters.embedders.conftest import EmbedServer
from tests.fakes.model_server import FakeModelServer

pytestmark = pytest.mark.integration

TEXTS = ["red apples and green pears", "fast cars on the highway", "green pears are sweet", "", "x " * 30000]


async def test_openai_adapter_batches_orders_and_normalises(embed_server: EmbedServer,
                                                            make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(embedder_base_url=f"{embed_server.url}/v1", embedder_api_key="k",
                             embed_batch_size=2)
    e = build_embedder("openai:my-embed", settings)
    assert e.model_id == "openai:my-embed"
    out = await e.embed_passages(TEXTS)
    assert out.shape == (5, 48)
    np.testing.assert_allclose(np.linalg.norm(out[[0, 1, 2, 4]], axis=1), 1.0, atol=1e-5)
    assert e.dimension == 48
    bodies = [b for p, b in embed_server.requests]
    assert [len(b["input"]) for b in bodies] == [2, 2, 1]
    assert all(b["model"] == "my-embed" and b["encoding_format"] == "float" for b in bodies)
    assert all(len(t) <= 20_000 for b in bodies for t in b["input"])
    # the server answers in reverse order; index-sorting puts vector i with text i
    q = await e.embed_query("green pears")
    assert int(np.argmax(out[:3] @ q)) in (0, 2)
    assert (out[1] @ q) < 0.5


async def test_openai_adapter_retries_transient_errors(embed_server: EmbedServer) -> None:
    embed_server.fail_first = 2
    e = OpenAIEmbedder("m", base_url=f"{embed_server.url}/v1", retry_delay=0.01)
    out = await e.embed_passages(["hello world"])
    assert out.shape == (1, 48)
    assert len(embed_server.requests) == 3
    await e.aclose()


async def test_openai_adapter_gives_up_on_permanent_errors(embed_server: EmbedServer) -> None:
    embed_server.fail_first, embed_server.fail_status = 5, 401
    e = OpenAIEmbedder("m", base_url=f"{embed_server.url}/v1", retry_delay=0.01)
    with pytest.raises(openai.AuthenticationError):
        await e.embed_passages(["hello"])
    assert len(embed_server.requests) == 1
    await e.aclose()


async def test_openai_adapter_against_the_shared_fake_model_server(make_settings: Callable[...,
                                                                                           Settings]) -> None:
    async with FakeModelServer(embedding_dimension=32) as fake:
        e = build_embedder("openai:fake-embed", make_settings(embedder_base_url=fake.base_url))
        out = await e.embed_passages(["apples and pears", "pears and apples", "quantum chromodynamics"])
        assert out.shape == (3, 32)
        assert out[0] @ out[1] > out[0] @ out[2]


async def test_ollama_adapter(embed_server: EmbedServer, make_settings: Callable[..., Settings]) -> None:
    embed_server.fail_first = 1
    e = build_embedder("ollama:nomic-embed-text", make_settings(embedder_base_url=embed_server.url,
                                                               embed_batch_size=3))
    assert isinstance(e, OllamaEmbedder)
    assert e.model_id == "ollama:nomic-embed-text"
    e._retry_delay = 0.01
    out = await e.embed_passages(TEXTS)
    assert out.shape == (5, 48)
    assert e.dimension == 48
    paths = [p for p, _ in embed_server.requests]
    assert paths == ["/api/embed"] * 3  # one injected 503 retried, then two batches
    q = await e.embed_query("green pears")
    assert q.shape == (48,)
    assert float(out[2] @ q) > float(out[1] @ q)
