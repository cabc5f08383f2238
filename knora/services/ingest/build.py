"""Turning the chunker's drafts into linked chunk records (spec §9.1 relations).

Flat mode: text chunks form one pre/next chain in chunk-index order. Parent-child mode: each child points at
its ``parent_text`` through ``parent_chunk_id`` and has no pre/next links; the parents are chained among
themselves.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from typing import Any, Protocol

from knora.domain.common import new_id, utcnow
from knora.domain.document import PageSpan, chunk_location
from knora.domain.knowledge import SEARCHABLE_CHUNK_TYPES, Chunk, ChunkType, Knowledge


class Draft(Protocol):
    """What the chunker's ``ChunkDraft`` offers (read-only)."""

    @property
    def content(self) -> str: ...
    @property
    def chunk_index(self) -> int: ...
    @property
    def start_at(self) -> int: ...
    @property
    def end_at(self) -> int: ...
    @property
    def chunk_type(self) -> Any: ...
    @property
    def parent_index(self) -> int | None: ...
    @property
    def context_header(self) -> str: ...


def build_chunks(knowledge: Knowledge, drafts: Sequence[Draft],
                 pages: Sequence[PageSpan] = ()) -> list[Chunk]:
    """Chunk records for ``drafts``; with the document's ``pages``, each chunk's metadata says where it is
    (``page``, ``page_end``, ``page_kind``, ``page_label``: see ``knora.domain.document.chunk_location``)."""
    kept = [d for d in drafts if d.content and d.content.strip()]
    ids = [new_id() for _ in kept]
    # parent_index refers to positions in the chunker's list; map them onto the kept list.
    pos_of = {id(d): i for i, d in enumerate(kept)}
    original = {i: d for i, d in enumerate(drafts)}
    chunks: list[Chunk] = []
    now = utcnow()  # one clock read for the document (two per chunk were a fifth of this function's time)
    for i, d in enumerate(kept):
        parent_id = None
        if d.parent_index is not None and d.parent_index in original:
            j = pos_of.get(id(original[d.parent_index]))
            parent_id = ids[j] if j is not None else None
        chunks.append(Chunk(
            id=ids[i], tenant_id=knowledge.tenant_id, knowledge_base_id=knowledge.knowledge_base_id,
            knowledge_id=knowledge.id, tag_id=knowledge.tag_id, content=d.content,
            context_header=d.context_header or "", chunk_index=int(d.chunk_index),
            chunk_type=ChunkType(str(getattr(d.chunk_type, "value", d.chunk_type))),
            parent_chunk_id=parent_id,
            start_at=int(d.start_at), end_at=int(d.end_at),
            content_hash=hashlib.sha256(d.content.encode()).hexdigest(),
            metadata=dict(chunk_location(pages, int(d.start_at), int(d.end_at))),
            created_at=now, updated_at=now,
        ))
    has_parents = any(c.chunk_type == ChunkType.PARENT_TEXT for c in chunks)
    chain_type = ChunkType.PARENT_TEXT if has_parents else ChunkType.TEXT
    chain = sorted((c for c in chunks if c.chunk_type == chain_type), key=lambda c: c.chunk_index)
    for prev, nxt in itertools.pairwise(chain):
        prev.next_chunk_id = nxt.id
        nxt.pre_chunk_id = prev.id
    return chunks


def searchable(chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.chunk_type in SEARCHABLE_CHUNK_TYPES]
