"""Which chunks an image is attached to (``knora.services.ingest.images.attach_images``): the text chunks
whose span holds its offset (and their parent in parent-child mode); between chunks or past the end, the
nearest text chunk before it; a caption becomes an ``image_caption`` child with an empty span."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.knowledge import Chunk, ChunkingConfig, ChunkType, Knowledge
from knora.ports.parser import ParsedImage
from knora.services.ingest.build import build_chunks
from knora.services.ingest.chunker import split_document
from knora.services.ingest.images import StoredImage, attach_images

pytestmark = pytest.mark.unit

K = Knowledge(tenant_id=1, knowledge_base_id="kb", id="k1")


def stored(offset: int, caption: str = "", index: int = 0) -> StoredImage:
    return StoredImage(index=index, name=f"{index}.png", url=f"/api/v1/knowledge/k1/images/{index}.png",
                       image=ParsedImage(data=b"x", offset=offset, ocr_text="OCR"), caption=caption)


def text_chunks(text: str, **cfg: Any) -> list[Chunk]:
    return build_chunks(K, split_document(text, ChunkingConfig(**cfg).normalised()))


class TestAttachImages:
    def test_the_chunk_holding_the_offset_gets_it_with_a_relative_position(self) -> None:
        text = "\n\n".join(f"Paragraph {i} " + "word " * 40 for i in range(6))
        chunks = text_chunks(text, chunk_size=120, chunk_overlap=0)
        assert len(chunks) > 2
        target = chunks[2]
        offset = target.start_at + 5
        captions = attach_images(K, chunks, [stored(offset, "A red chart.")])
        holders = [c for c in chunks if c.image_info]
        assert target in holders
        assert all(c.start_at <= offset < c.end_at for c in holders)
        info = target.image_info[0]
        assert (info["start_pos"], info["end_pos"], info["ocr_text"]) == (5, 5, "OCR")
        assert info["url"] == info["original_url"] == "/api/v1/knowledge/k1/images/0.png"
        [cap] = captions
        assert cap.chunk_type == ChunkType.IMAGE_CAPTION
        assert cap.parent_chunk_id == holders[0].id
        assert (cap.start_at, cap.end_at, cap.content) == (offset, offset, "A red chart.")
        assert cap.chunk_index > max(c.chunk_index for c in chunks)
        for c in chunks:  # the text chunks' invariant is untouched
            assert text[c.start_at:c.end_at] == c.content

    def test_past_the_end_goes_to_the_last_chunk_and_no_caption_means_no_caption_chunk(self) -> None:
        text = "Alpha beta.\n\nGamma delta."
        chunks = text_chunks(text)
        assert attach_images(K, chunks, [stored(len(text))]) == []
        last = max(chunks, key=lambda c: c.start_at)
        assert last.image_info[0]["caption"] == ""

    def test_parent_child_mode_attaches_to_parent_and_child_and_captions_the_child(self) -> None:
        text = "\n\n".join(f"Section {i}. " + "text " * 60 for i in range(4))
        chunks = text_chunks(text, enable_parent_child=True, parent_chunk_size=600, child_chunk_size=100)
        child = next(c for c in chunks if c.chunk_type == ChunkType.TEXT and c.start_at > 300)
        offset = child.start_at + 1
        [cap] = attach_images(K, chunks, [stored(offset, "Caption")])
        kinds = {c.chunk_type for c in chunks if c.image_info}
        assert kinds == {ChunkType.TEXT, ChunkType.PARENT_TEXT}
        parent = next(c for c in chunks if c.id == cap.parent_chunk_id)
        assert parent.chunk_type == ChunkType.TEXT

    def test_an_image_only_document_gets_parentless_caption_chunks(self) -> None:
        [cap] = attach_images(K, [], [stored(0, "A scanned receipt.")])
        assert cap.parent_chunk_id is None
        assert (cap.knowledge_id, cap.content) == ("k1", "A scanned receipt.")
