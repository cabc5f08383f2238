"""The search's hot reads on PostgreSQL (127.0.0.1:5432, a fresh database) go through asyncpg itself in one
statement each (knowledge bases with the tenant's config; chunks joined to their documents): the records they
build must equal the ones the SQLAlchemy session reads build, for every column."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy import update

from knora.adapters.db.repos import search_reads as sr
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow
from knora.settings import Settings
from tests.conftest import RECORDING, started
from tests.services.retrieval.conftest import Seeder

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
async def pg(make_settings: Callable[..., Settings], fresh_pg_url: str) -> AsyncIterator[Any]:
    async with started(make_settings(database_url=fresh_pg_url), RECORDING) as c:
        yield c


def _by_id(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda m: m.id)


async def test_joined_read_equals_the_session_read(pg: Any) -> None:
    seed = Seeder(pg)
    kb = await seed.kb()
    k, chunks = await seed.doc(kb, ["first chunk", "second chunk", "x" * 400, "fourth"])
    async with pg.sessions.begin() as s:  # JSON values, unicode in JSON, a NULL timestamp
        await s.execute(update(ChunkRow).where(ChunkRow.id == chunks[0].id).values(
            metadata_={"page": 3, "名": ["ä", None]}, relation_chunks=[chunks[1].id]))
        await s.execute(update(KnowledgeRow).where(KnowledgeRow.id == k.id).values(
            metadata_={"source": "scan"}, processed_at=None))
    other, more = await seed.doc(kb, ["another document's chunk"])
    reads = pg.search_service.store
    assert reads._pg is not None
    ids = [chunks[0].id, chunks[2].id, more[0].id, "missing"]
    for below in (0, 350):
        fast = await reads.chunks_with_knowledge(ids, neighbours_below=below)
        ref = await reads._read(sr._chunks_with_knowledge, ids, below)
        assert _by_id(fast[0]) == _by_id(ref[0])
        assert _by_id(fast[1]) == _by_id(ref[1])
    fast_chunks, docs = await reads.chunks_with_knowledge(ids, neighbours_below=350)
    # chunk 0 is short: its neighbour 1 came along; chunk 2 is long; the missing id is absent
    assert {c.id for c in fast_chunks} == {chunks[0].id, chunks[1].id, chunks[2].id, more[0].id}
    first = next(c for c in fast_chunks if c.id == chunks[0].id)
    assert first.metadata["名"] == ["ä", None]
    assert first.created_at.tzinfo is not None
    assert {d.id for d in docs} == {k.id, other.id}
    assert next(d for d in docs if d.id == k.id).processed_at is None
    assert await reads.chunks_with_knowledge([]) == ([], [])


async def test_knowledge_bases_come_with_the_tenant_config_in_one_statement(pg: Any) -> None:
    seed = Seeder(pg)
    kb = await seed.kb("one")
    kb2 = await seed.kb("two", keyword=False)
    async with pg.sessions.begin() as s:  # a value stored before the column had a default
        await s.execute(update(KnowledgeBaseRow).where(KnowledgeBaseRow.id == kb2.id).values(
            retrieval_config=None, storage_provider_config={"provider": "local"}))
    tenant = kb.tenant_id
    reads = pg.search_service.store
    ids = [kb2.id, "nope", kb.id, kb2.id]
    for config in ({}, {"vector_threshold": 0.4, "名": "ä"}):
        await seed.set_tenant_config(tenant, config)
        kbs, got = await reads.knowledge_bases_with_tenant_config(ids, tenant)
        ref_kbs, ref_config = await reads._read(sr._knowledge_bases_with_tenant_config, ids, tenant)
        assert (kbs, got) == (ref_kbs, ref_config)
        assert [x.id for x in kbs] == [kb2.id, kb.id]
        assert got == config
    # no knowledge base found: the tenant's config still comes back
    assert await reads.knowledge_bases_with_tenant_config(["nope"], tenant) == ([], config)
    assert await reads.knowledge_bases_with_tenant_config([kb.id], 999_999) == (
        await reads._read(sr._knowledge_bases_with_tenant_config, [kb.id], 999_999))
