"""With the real retrieval engine wired (embedded profile): an ingested document is found by hybrid search, a
re-parse leaves no stale chunk behind, and a deleted document is gone from search."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.domain.search import SearchParams
from knora.settings import Settings
from tests.conftest import started

pytestmark = pytest.mark.integration

DOC = (b"# Otters\n\nSea otters hold hands while they sleep so that they do not drift apart.\n\n"
       b"# Beavers\n\nBeavers build dams from branches and mud across streams.")


@pytest.fixture
async def full(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    async with started(make_settings()) as c:
        yield c


async def _search(c: Any, kb_id: str, text: str) -> list[Any]:
    return list(await c.search_service.search(c.default_tenant_id, SearchParams(
        knowledge_base_id=kb_id, knowledge_base_ids=[kb_id], query_text=text, vector_threshold=0.0,
        keyword_threshold=0.0)))


async def test_ingested_document_is_searchable_then_gone(full: Any) -> None:
    c = full
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "animals",
                                                         "chunking_config": {"chunk_size": 100}})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "animals.md", DOC)
    await c.jobs.wait_idle(60)
    hits = await _search(c, kb.id, "otters sleep holding hands")
    assert hits
    assert hits[0].knowledge_id == k.id
    assert "otters" in hits[0].content.lower()
    before = {h.id for h in hits}
    await c.kb_service.update(c.default_tenant_id, kb.id, {"chunking_config": {"chunk_size": 60}})
    await c.ingest_service.reparse(c.default_tenant_id, k.id)
    await c.jobs.wait_idle(60)
    current = set(await c.repos.chunks.ids_for_knowledge(k.id))
    hits = await _search(c, kb.id, "otters sleep holding hands")
    assert hits
    assert {h.id for h in hits} <= current
    assert not ({h.id for h in hits} & before)
    await c.ingest_service.delete(c.default_tenant_id, k.id)
    assert await _search(c, kb.id, "otters sleep holding hands") == []
