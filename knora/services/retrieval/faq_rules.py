"""FAQ post-processing inside HybridSearch (spec §3.6): iterative re-retrieval and negative-question
filtering.

An FAQ entry indexed in "separate" mode has one index row per similar question, so a vector pool of N rows may
hold far fewer than N distinct FAQs; re-retrieving with a larger pool fixes that. Negative questions are the
operator's "never answer this question with this entry" list — matched exactly (trimmed, lower-cased).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knora.domain.errors import AppError
from knora.domain.knowledge import Chunk, ChunkType
from knora.domain.search import EngineHit
from knora.services.retrieval.hydrate import Hit

if TYPE_CHECKING:
    from knora.services.retrieval.hybrid import HybridSearch

MAX_ROUNDS = 5
MAX_TOP_K = 500


def _norm(s: str) -> str:
    return s.strip().lower()


def is_negative(chunk: Chunk | None, query: str) -> bool:
    """True when the query is one of the FAQ's negative questions (exact, case-insensitive)."""
    if chunk is None or chunk.chunk_type != ChunkType.FAQ:
        return False
    negatives = (chunk.metadata or {}).get("negative_questions") or []
    if not isinstance(negatives, list):
        return False
    q = _norm(query)
    return any(isinstance(n, str) and _norm(n) == q for n in negatives)


async def filter_negative(search: HybridSearch, hits: list[Hit], query: str,
                          cache: dict[str, Chunk] | None = None) -> list[Hit]:
    cache = {} if cache is None else cache
    missing = [h.chunk_id for h in hits if h.chunk_id not in cache]
    if missing:
        cache.update({c.id: c for c in await search.store.chunks(missing)})
    return [h for h in hits if not is_negative(cache.get(h.chunk_id), query)]


async def post_process(search: HybridSearch, hits: list[Hit], vec_hits: list[EngineHit], groups: list[Any],
                       query: str, match_count: int, pool: int) -> list[Hit]:
    if not (len(hits) < match_count and len(vec_hits) == pool):
        return await filter_negative(search, hits, query)
    cache: dict[str, Chunk] = {}
    best: dict[str, Hit] = {}
    for h in await filter_negative(search, hits, query, cache):
        best[h.chunk_id] = h
    top_k = min(match_count * 3, MAX_TOP_K)
    for _ in range(MAX_ROUNDS):
        try:
            vec, _kw = await search._retrieve(groups, top_k=top_k)
        except AppError:
            raise
        except Exception:  # noqa: BLE001 - partial results are better than none (spec §3.6)
            break
        round_hits = [Hit(h.chunk_id, h.score, int(h.match_type), h.content,
                          {"vector": h.score, "fused": h.score}) for h in vec]
        for h in await filter_negative(search, round_hits, query, cache):
            if h.chunk_id not in best or h.score > best[h.chunk_id].score:
                best[h.chunk_id] = h
        if len(best) >= match_count or len(vec) < top_k or top_k >= MAX_TOP_K:
            break
        top_k = min(top_k * 2, MAX_TOP_K)
    return sorted(best.values(), key=lambda h: (-h.score, h.chunk_id))
