"""Issue 20 item 11: a 99 kB query is accepted, but the engines and the embedder see at most
``MAX_ENGINE_QUERY_CHARS`` characters of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.domain.search import SearchParams
from knora.root import Services
from knora.services.retrieval.bounds import MAX_ENGINE_QUERY_CHARS, engine_query
from knora.settings import Settings
from tests.conftest import RECORDING, record_retrieval, started


def test_short_queries_are_untouched_and_long_ones_end_at_a_word() -> None:
    assert engine_query("how do I stop a turn?") == "how do I stop a turn?"
    long = "alpha beta gamma " * 1000
    bounded = engine_query(long)
    assert len(bounded) <= MAX_ENGINE_QUERY_CHARS
    assert long.startswith(bounded)
    assert bounded.split()[-1] in ("alpha", "beta", "gamma")  # no half word
    unbroken = "x" * 50_000  # no boundary near the limit: cut at the limit
    assert engine_query(unbroken) == "x" * MAX_ENGINE_QUERY_CHARS


@pytest.fixture
async def services(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings(), RECORDING) as c:
        yield c


async def test_the_engines_and_the_embedder_see_a_bounded_query(services: Services,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    c = services
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "bounded"})
    seen: list[str] = []

    async def search(query: Any) -> list[Any]:
        seen.append(query.text or "")
        return []

    monkeypatch.setattr(record_retrieval(c), "search", search)
    embedder = await c.search_service.embedders.get(kb.embedding_model_id or None,
                                                    tenant_id=c.default_tenant_id)
    embed_query = embedder.embed_query
    embedded: list[str] = []

    async def recording_embed(text: str) -> Any:
        embedded.append(text)
        return await embed_query(text)

    monkeypatch.setattr(embedder, "embed_query", recording_embed)
    query = "knora retrieval bounds " * 4300  # ~99 kB
    assert len(query.encode()) < 100_000
    params = SearchParams(knowledge_base_id=kb.id, query_text=query)
    await c.search_service.search(c.default_tenant_id, params)
    assert embedded
    assert all(len(t) <= MAX_ENGINE_QUERY_CHARS for t in embedded)
    assert [t for t in seen if t]
    assert all(len(t) <= MAX_ENGINE_QUERY_CHARS for t in seen)
