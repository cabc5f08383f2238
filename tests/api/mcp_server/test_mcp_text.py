"""``document_text``: a document's text from its overlapping chunks, as the chunker wrote them."""

from __future__ import annotations

import pytest

from knora.api.mcp_server.text import document_text
from knora.domain.knowledge import Chunk, ChunkingConfig
from knora.services.ingest.chunker import split_document

pytestmark = pytest.mark.unit

TEXT = "\n\n".join(f"Paragraph {i}. " + " ".join(f"word{i}-{j}" for j in range(40)) for i in range(12))


def chunks(config: ChunkingConfig) -> list[Chunk]:
    drafts = [d for d in split_document(TEXT, config) if d.chunk_type == "text"]
    return [Chunk(tenant_id=1, knowledge_base_id="kb", knowledge_id="k", content=d.content,
                  chunk_index=d.chunk_index, start_at=d.start_at, end_at=d.end_at) for d in drafts]


class TestDocumentText:
    @pytest.mark.parametrize("config", [
        ChunkingConfig(chunk_size=200, chunk_overlap=50),
        ChunkingConfig(chunk_size=120, chunk_overlap=0),
        ChunkingConfig(enable_parent_child=True, parent_chunk_size=600, child_chunk_size=150),
    ], ids=["overlap", "no-overlap", "parent-child"])
    def test_overlapping_chunks_give_the_text_once(self, config: ChunkingConfig) -> None:
        got = chunks(config)
        assert len(got) > 3
        assert sum(len(c.content) for c in got) >= len(TEXT.strip())
        assert document_text(got) == TEXT.strip()

    def test_an_edited_chunk_is_kept_whole(self) -> None:
        got = chunks(ChunkingConfig(chunk_size=200, chunk_overlap=50))
        got[1] = got[1].model_copy(update={"content": "EDITED BY HAND"})
        text = document_text(got)
        assert "\n\nEDITED BY HAND" in text
        assert text.startswith(got[0].content)
        assert text.endswith(got[-1].content)

    def test_no_chunks(self) -> None:
        assert document_text([]) == ""
