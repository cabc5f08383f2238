"""``IngestService.add_passages``: one document and one verbatim chunk per passage, indexed with its title,
completed at once; the storage quota still applies."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knora.domain.errors import AppError
from knora.domain.knowledge import ParseStatus
from knora.services.ingest.passages import NewPassage
from knora.settings import Settings
from tests.conftest import RECORDING, record_retrieval, started

pytestmark = pytest.mark.integration

LONG = "Oolong tea is partially oxidised. " * 40  # longer than a default chunk (512 characters)


async def test_one_chunk_per_passage(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings(), RECORDING) as c:
        tenant = c.default_tenant_id
        kb = await c.kb_service.create(tenant, {"name": "passages"})
        docs = await c.ingest_service.add_passages(tenant, kb.id, [
            NewPassage("Tea", LONG, {"corpus_id": "p1"}), NewPassage("", "  Panels make 400 W.  ")])
        assert [d.parse_status for d in docs] == [ParseStatus.COMPLETED, ParseStatus.COMPLETED]
        stored = await c.repos.knowledge.get(tenant, docs[0].id)
        assert stored is not None
        assert stored.parse_status == ParseStatus.COMPLETED
        assert stored.metadata == {"corpus_id": "p1"}
        assert stored.title == "Tea"
        chunks = await c.repos.chunks.list(tenant, docs[0].id, page=1, page_size=10)
        assert [ch.content for ch in chunks.items] == [LONG]  # not split, not trimmed
        indexed = {row.knowledge_id: row for row in record_retrieval(c).rows.values()}
        assert indexed[docs[0].id].content == f"Tea\n{LONG.strip()}"  # Chunk.index_content(title)
        assert indexed[docs[1].id].content == "Panels make 400 W."
        assert indexed[docs[0].id].embedding is not None


async def test_the_storage_quota_applies(make_settings: Callable[..., Settings]) -> None:
    async with started(make_settings(tenant_storage_quota_bytes=100), RECORDING) as c:
        kb = await c.kb_service.create(c.default_tenant_id, {"name": "small"})
        with pytest.raises(AppError, match="Storage quota exceeded"):
            await c.ingest_service.add_passages(c.default_tenant_id, kb.id, [NewPassage("Tea", LONG)])
        page = await c.repos.knowledge.list(c.default_tenant_id, kb.id, page=1, page_size=10)
        assert page.total == 0
