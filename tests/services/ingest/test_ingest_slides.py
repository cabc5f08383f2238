"""End to end on the embedded profile: a fact that is only in a slide's speaker notes, or only on one sheet of
a spreadsheet, is found by search, and its chunk says which slide or sheet it came from (what a citation
shows)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.domain.document import location_text
from knora.domain.search import SearchParams
from knora.settings import Settings
from tests.adapters.parsers.test_odf import make_ods
from tests.adapters.parsers.test_pptx import make_deck
from tests.conftest import started

pytestmark = pytest.mark.integration


@pytest.fixture
async def full(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    async with started(make_settings()) as c:
        yield c


async def _top_chunk(c: Any, kb_id: str, query: str) -> Any:
    hits = list(await c.search_service.search(c.default_tenant_id, SearchParams(
        knowledge_base_id=kb_id, knowledge_base_ids=[kb_id], query_text=query, vector_threshold=0.0,
        keyword_threshold=0.0)))
    assert hits
    return await c.repos.chunks.get(c.default_tenant_id, hits[0].id)


async def test_notes_and_sheet_facts_are_found_with_their_slide_and_sheet(full: Any) -> None:
    c = full
    kb = await c.kb_service.create(c.default_tenant_id,
                                   {"name": "decks", "chunking_config": {"chunk_size": 40}})
    await c.ingest_service.add_file(c.default_tenant_id, kb.id, "deck.pptx", make_deck())
    await c.ingest_service.add_file(c.default_tenant_id, kb.id, "staff.ods", make_ods())
    await c.jobs.wait_idle(120)
    notes = await _top_chunk(c, kb.id, "Lisbon office opening")
    assert "Lisbon" in notes.content
    # the chunker may run a chunk on into the next slide ("slides 1–2"); it starts on the notes' slide
    assert (notes.metadata["page"], notes.metadata["page_kind"]) == (1, "slide")
    assert location_text(notes.metadata).startswith("slide")
    sheet = await _top_chunk(c, kb.id, "Ana search team")
    assert "Ana" in sheet.content
    assert location_text(sheet.metadata) == "sheet Staff"
