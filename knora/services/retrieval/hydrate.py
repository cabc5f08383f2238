"""Turning fused hits into public SearchResults (spec §3.7): load chunks and documents, drop what must not be
returned, optionally add context chunks (parent, relation, previous/next)."""

from __future__ import annotations

from dataclasses import dataclass, field

from knora.domain.knowledge import SEARCHABLE_CHUNK_TYPES, Chunk, ChunkType, Knowledge, ParseStatus
from knora.domain.search import MatchType, SearchResult
from knora.ports.search_store import SearchStore


@dataclass
class Hit:
    """One fused hit before hydration."""

    chunk_id: str
    score: float
    match_type: int
    matched_content: str = ""
    scores: dict[str, float] = field(default_factory=dict)


def is_searchable(chunk: Chunk | None, knowledge: Knowledge | None) -> bool:
    """Spec §3.7 ``isSearchableChunk`` plus Knora's rule that a document still being (re)parsed is not
    searched."""
    if chunk is None or knowledge is None:
        return False
    if not chunk.is_enabled or chunk.index_status in ("processing", "failed"):
        return False
    if chunk.chunk_type not in SEARCHABLE_CHUNK_TYPES:
        return False
    return knowledge.parse_status == ParseStatus.COMPLETED and knowledge.enable_status != "disabled"


def build_result(chunk: Chunk, k: Knowledge, hit: Hit) -> SearchResult:
    return SearchResult(
        id=chunk.id, content=chunk.content, knowledge_id=chunk.knowledge_id, chunk_index=chunk.chunk_index,
        knowledge_title=k.title, start_at=chunk.start_at, end_at=chunk.end_at, seq=chunk.chunk_index,
        score=hit.score, match_type=int(hit.match_type), metadata=dict(k.metadata),
        chunk_type=str(chunk.chunk_type),
        parent_chunk_id=chunk.parent_chunk_id or "",
        image_info=chunk.image_info_text(),
        knowledge_filename=k.file_name, knowledge_source=k.source, knowledge_channel=k.channel,
        knowledge_base_id=chunk.knowledge_base_id, knowledge_description=k.description,
        matched_content=hit.matched_content, chunk_metadata=dict(chunk.metadata) or None,
        scores=dict(hit.scores))


async def hydrate(store: SearchStore, tenant_ids: set[int], hits: list[Hit], *,
                  enrich: bool) -> list[SearchResult]:
    """Primary hits in fused order (deduped by id), then enrichment chunks (score inherited or 0).

    A store that can join chunks to their documents (``chunks_with_knowledge``) is read once per batch of
    chunks (once in all without enrichment, the chat pipeline's case); otherwise chunks, context chunks,
    documents."""
    joined = getattr(store, "chunks_with_knowledge", None)
    chunks: dict[str, Chunk] = {}
    knowledge: dict[str, Knowledge] = {}

    async def load(ids: list[str]) -> None:
        if not ids:
            return
        if joined is None:
            chunks.update({c.id: c for c in await store.chunks(ids)})
            return
        found, docs = await joined(ids)
        chunks.update({c.id: c for c in found})
        knowledge.update({k.id: k for k in docs})

    await load([h.chunk_id for h in hits])
    extra: dict[str, Hit] = {}
    if enrich:
        stored = {h.chunk_id: h.score for h in hits}
        for h in hits:
            c = chunks.get(h.chunk_id)
            if c is None:
                continue
            if c.parent_chunk_id:
                extra.setdefault(c.parent_chunk_id, Hit(c.parent_chunk_id, h.score, MatchType.PARENT_CHUNK))
            for rel in c.relation_chunks:
                if isinstance(rel, str) and rel:
                    extra.setdefault(rel, Hit(rel, stored.get(rel, 0.0), MatchType.RELATION_CHUNK))
            if c.chunk_type == ChunkType.TEXT:
                for nb in (c.pre_chunk_id, c.next_chunk_id):
                    if nb:
                        extra.setdefault(nb, Hit(nb, stored.get(nb, 0.0), MatchType.NEARBY_CHUNK))
        await load([cid for cid in extra if cid not in chunks])
    if joined is None:
        knowledge = {k.id: k for k in await store.knowledge(list({c.knowledge_id for c in chunks.values()}))}
    return _results(tenant_ids, hits, extra, chunks, knowledge)


def _results(tenant_ids: set[int], hits: list[Hit], extra: dict[str, Hit], chunks: dict[str, Chunk],
             knowledge: dict[str, Knowledge]) -> list[SearchResult]:
    out: list[SearchResult] = []
    seen: set[str] = set()
    for h in [*hits, *extra.values()]:
        if h.chunk_id in seen:
            continue
        c = chunks.get(h.chunk_id)
        k = knowledge.get(c.knowledge_id) if c else None
        if c is None or k is None or c.tenant_id not in tenant_ids or not is_searchable(c, k):
            continue
        seen.add(h.chunk_id)
        out.append(build_result(c, k, h))
    return out
