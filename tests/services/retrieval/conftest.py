"""A container wired with the retrieval area only (plus the embedder registry), and a seeder that writes
knowledge bases, documents and chunks straight into the store and indexes them with the ``local:hash``
embedder."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow, TagRow, TenantRow
from knora.domain.knowledge import (
    Chunk,
    ChunkType,
    IndexingStrategy,
    KBType,
    Knowledge,
    KnowledgeBase,
    ParseStatus,
    Tag,
)
from knora.domain.search import IndexRow
from knora.settings import Settings


class Seeder:
    def __init__(self, c: Any) -> None:
        self.c = c
        self._docs = itertools.count(1)

    async def tenant(self, name: str = "other") -> int:
        async with self.c.sessions.begin() as s:
            row = TenantRow(name=name, retrieval_config={})
            s.add(row)
            await s.flush()
            return int(row.id)

    async def set_tenant_config(self, tenant_id: int, cfg: dict[str, Any]) -> None:
        async with self.c.sessions.begin() as s:
            row = await s.get(TenantRow, tenant_id)
            row.retrieval_config = cfg

    async def kb(self, name: str = "kb", *, tenant_id: int | None = None, type: KBType = KBType.DOCUMENT,
                 embedding_model_id: str = "", vector: bool = True, keyword: bool = True) -> KnowledgeBase:
        kb = KnowledgeBase(tenant_id=tenant_id or self.c.default_tenant_id, name=name, type=type,
                           embedding_model_id=embedding_model_id,
                           indexing_strategy=IndexingStrategy(vector_enabled=vector, keyword_enabled=keyword))
        async with self.c.sessions.begin() as s:
            s.add(to_row(KnowledgeBaseRow, kb))
        return kb

    async def tag(self, kb: KnowledgeBase, name: str) -> Tag:
        tag = Tag(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, name=name)
        async with self.c.sessions.begin() as s:
            s.add(to_row(TagRow, tag))
        return tag

    async def doc(self, kb: KnowledgeBase, texts: list[str], *, title: str = "", tag_id: str | None = None,
                  status: ParseStatus = ParseStatus.COMPLETED, chunk_type: ChunkType = ChunkType.TEXT,
                  metadata: list[dict[str, Any]] | None = None, index: bool = True) -> tuple[Knowledge,
                                                                                             list[Chunk]]:
        k = Knowledge(tenant_id=kb.tenant_id, knowledge_base_id=kb.id,
                      title=title or f"doc-{next(self._docs)}",  # not random: titles are embedded
                      parse_status=status, tag_id=tag_id)
        chunks = [Chunk(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, knowledge_id=k.id, tag_id=tag_id,
                        content=t, chunk_index=i, chunk_type=chunk_type, end_at=len(t),
                        metadata=(metadata[i] if metadata else {})) for i, t in enumerate(texts)]
        for a, b in itertools.pairwise(chunks):
            a.next_chunk_id, b.pre_chunk_id = b.id, a.id
        async with self.c.sessions.begin() as s:
            s.add(to_row(KnowledgeRow, k))
            await s.flush()
            for ch in chunks:
                s.add(to_row(ChunkRow, ch))
        if index:
            await self.index(kb, k, chunks)
        return k, chunks

    async def index(self, kb: KnowledgeBase, k: Knowledge, chunks: list[Chunk]) -> None:
        contents = [ch.index_content(k.title) for ch in chunks]
        embedder = await self.c.embedders.get(kb.embedding_model_id or None, tenant_id=kb.tenant_id)
        vectors = await embedder.embed_passages(contents)
        await self.c.retrieval.index([
            IndexRow(source_id=ch.id, chunk_id=ch.id, knowledge_id=k.id, knowledge_base_id=kb.id,
                     tenant_id=kb.tenant_id, content=text, embedding=vectors[i].tolist(), tag_id=ch.tag_id,
                     knowledge_type="faq" if kb.type == KBType.FAQ else "document")
            for i, (ch, text) in enumerate(zip(chunks, contents, strict=True))])

    async def update_chunk(self, chunk_id: str, **values: Any) -> None:
        async with self.c.sessions.begin() as s:
            row = await s.get(ChunkRow, chunk_id)
            for key, v in values.items():
                setattr(row, key, v)


@pytest.fixture
async def rc(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    """Running services (the retrieval tests use the engine, hybrid search and the embedder registry)."""
    from tests.conftest import started

    async with started(make_settings()) as c:
        yield c


@pytest.fixture
def seed(rc: Any) -> Seeder:
    return Seeder(rc)
