"""Local query expansion (spec §2.7): no LLM, a few lexical variants searched again when recall was thin.

Used by the chat pipeline's ``chunk_search`` when ``EnableQueryExpansion`` is on and the first recall returned
fewer than EmbeddingTopK hits. Results are returned unsorted and undeduplicated; the caller dedups.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from types import ModuleType

from knora.domain.knowledge import DEFAULT_KEYWORD_THRESHOLD, DEFAULT_VECTOR_THRESHOLD
from knora.domain.search import SearchParams, SearchResult, SearchTarget
from knora.services.retrieval.hybrid import HybridSearch

log = logging.getLogger(__name__)

MAX_VARIANTS = 5
MAX_CONCURRENCY = 16
STOPWORDS = frozenset(
    ["的", "是", "在", "了", "和", "与", "或", "a", "an", "the", "is", "are", "was", "were", "be", "been",
     "being", "have", "has", "had", "do", "does", "did", "will", "would", "could", "should", "may", "might",
     "must", "can", "to", "of", "in", "for", "on", "with", "at", "by", "from", "as", "into", "through",
     "about", "what", "how", "why", "when", "where", "which", "who", "whom", "whose"]
)
_QUOTED = re.compile(r"[\"'「『]([^\"'「」『』]+)[\"'」』]")
_SPLIT = re.compile(r"[,，;；、。！？!?\s]+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
_QUESTION = re.compile(r"^(什么是|什么|如何|怎么|怎样|为什么|为何|哪个|哪些|谁|何时|何地|"
                       r"请问|请告诉我|帮我|我想知道|我想了解)")


def _jieba() -> ModuleType:
    import jieba

    module: ModuleType = jieba
    if not jieba.dt.initialized:
        jieba.setLogLevel(logging.WARNING)
        jieba.dt.initialize()
    return module


def _tokens(text: str) -> list[str]:
    """Spec §2.7 ``tokenize``: Han runs through jieba search mode, letter/digit runs whole, no stemming."""
    out: list[str] = []
    for m in _RUN.finditer(text):
        if m.group(1):
            out.extend(t for t in _jieba().cut_for_search(m.group(1), HMM=True) if t.strip())
        else:
            out.append(m.group(2))
    return out


def expand_queries(rewrite_query: str, original_query: str = "") -> list[str]:
    query = rewrite_query.strip()
    if not query:
        return []
    seen = {query.lower(), original_query.strip().lower()}
    variants: list[str] = []

    def add(s: str) -> None:
        s = s.strip()
        if not s or len(s.encode()) < 3 or s.lower() in seen:
            return
        seen.add(s.lower())
        variants.append(s)

    keywords = [t for t in _tokens(query) if t.lower() not in STOPWORDS and len(t) > 1]
    if len(keywords) >= 2:
        add(" ".join(keywords))
    for m in _QUOTED.finditer(query):
        if len(m.group(1).encode()) > 2:
            add(m.group(1))
    for seg in _SPLIT.split(query):
        if seg and len(seg.encode()) > 5:
            add(seg)
    stripped = _QUESTION.sub("", query, count=1).strip()
    if stripped != query:
        add(stripped)
    return variants[:MAX_VARIANTS]


async def run_query_expansion(search: HybridSearch, tenant_id: int, targets: Sequence[SearchTarget], *,
                              rewrite_query: str, original_query: str = "",
                              vector_threshold: float = DEFAULT_VECTOR_THRESHOLD,
                              keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD, embedding_top_k: int = 10,
                              rerank_top_k: int = 10) -> list[SearchResult]:
    variants = expand_queries(rewrite_query, original_query)
    jobs = [(v, t) for v in variants for t in targets if t.knowledge_base_id]
    if not jobs:
        return []
    top_k = max(embedding_top_k * 2, rerank_top_k * 2)
    kw_th = keyword_threshold * 0.8
    sem = asyncio.Semaphore(max(1, min(MAX_CONCURRENCY, len(jobs))))

    async def one(variant: str, t: SearchTarget) -> list[SearchResult]:
        v, k = t.recall_thresholds(vector_threshold, kw_th)
        params = SearchParams(knowledge_base_id=t.knowledge_base_id, query_text=variant, vector_threshold=v,
                              keyword_threshold=k, match_count=top_k, tag_ids=t.tag_ids,
                              scope_tag_ids=t.scope_tag_ids,
                              knowledge_ids=t.knowledge_ids if t.type == "knowledge" else [],
                              skip_context_enrichment=True)
        async with sem:
            try:
                found = await search.search(tenant_id, params)
            except Exception as exc:  # noqa: BLE001 - a failed variant is skipped (spec §2.7)
                log.info("expansion variant %r failed: %s", variant, exc)
                return []
        return [r.model_copy(update={"knowledge_base_id": t.knowledge_base_id}) for r in found]

    out: list[SearchResult] = []
    for part in await asyncio.gather(*(one(v, t) for v, t in jobs)):
        out.extend(part)
    return out
