"""Search scope → targets (spec §1.8) and one search over many targets (spec §2.6 ``searchByTargets``).

Whole-KB targets sharing an embedding model become one multi-KB HybridSearch call with a shared query
embedding; targets scoped to documents or tags run one call each, with recall thresholds off (the user chose
them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from knora.domain.errors import AppError
from knora.domain.knowledge import DEFAULT_KEYWORD_THRESHOLD, DEFAULT_VECTOR_THRESHOLD, KBType
from knora.domain.search import SearchParams, SearchResult, SearchTarget
from knora.services.retrieval.bounds import engine_query
from knora.services.retrieval.hybrid import HybridSearch
from knora.services.retrieval.shared import readable

log = logging.getLogger(__name__)


async def build_targets(search: HybridSearch, tenant_id: int, kb_ids: Sequence[str],
                        knowledge_ids: Sequence[str],
                        tag_scopes: dict[str, list[str]] | None = None) -> list[SearchTarget]:
    """Targets in spec order: requested KBs, then document targets, then tag targets. Foreign ids are
    ignored."""
    scopes: dict[str, list[str]] = {}
    for scope_kb, tags in (tag_scopes or {}).items():
        clean = list(dict.fromkeys(t for t in tags if t))
        if scope_kb and clean:
            scopes[scope_kb] = clean
    wanted = list(dict.fromkeys([*(k for k in kb_ids if k), *scopes]))
    kbs = {kb.id: kb for kb in await readable(search.store, tenant_id,
                                              await search.store.knowledge_bases(wanted))}
    targets: list[SearchTarget] = []
    full = set()
    for kb_id in dict.fromkeys(k for k in kb_ids if k):
        if kb_id in kbs and kb_id not in scopes:
            targets.append(SearchTarget(type="knowledge_base", knowledge_base_id=kb_id, tenant_id=tenant_id))
            full.add(kb_id)
    by_kb: dict[str, list[str]] = {}
    docs = [k for k in await search.store.knowledge(list(dict.fromkeys(knowledge_ids)))
            if k.tenant_id == tenant_id]
    for k in docs:
        if k.knowledge_base_id not in full:
            by_kb.setdefault(k.knowledge_base_id, []).append(k.id)
    for kb_id, ids in by_kb.items():
        if kb_id in scopes:
            continue
        targets.append(SearchTarget(type="knowledge", knowledge_base_id=kb_id, tenant_id=tenant_id,
                                    knowledge_ids=ids, disable_recall_thresholds=True))
    for kb_id, tags in scopes.items():
        kb = kbs.get(kb_id)
        if kb is None:
            continue
        if kb.type == KBType.FAQ:
            targets.append(SearchTarget(type="knowledge_base", knowledge_base_id=kb_id, tenant_id=tenant_id,
                                        tag_ids=tags, scope_tag_ids=tags, disable_recall_thresholds=True))
            continue
        ids = await search.store.knowledge_ids_with_tags(kb_id, tags)
        explicit = by_kb.get(kb_id)
        if explicit:
            ids = [i for i in ids if i in set(explicit)]
        if ids:
            targets.append(SearchTarget(type="knowledge", knowledge_base_id=kb_id, tenant_id=tenant_id,
                                        knowledge_ids=ids, scope_tag_ids=tags,
                                        disable_recall_thresholds=True))
    return targets


@dataclass
class TargetSearch:
    """Thresholds and sizes of one pipeline-style search (the chat pipeline's ``chunk_search``)."""

    query: str
    vector_threshold: float = DEFAULT_VECTOR_THRESHOLD
    keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD
    match_count: int = 10  # EmbeddingTopK
    skip_context_enrichment: bool = True


async def search_targets(search: HybridSearch, tenant_id: int, targets: Sequence[SearchTarget],
                         req: TargetSearch) -> tuple[list[SearchResult], Exception | None]:
    """All results (unsorted, possibly duplicated across calls) plus the first error, as spec §2.6 returns
    them."""
    kbs = {kb.id: kb for kb in await search.store.knowledge_bases([t.knowledge_base_id for t in targets])}
    groups: dict[str, list[SearchTarget]] = {}
    for t in targets:
        kb = kbs.get(t.knowledge_base_id)
        groups.setdefault(search.model_key(kb) if kb else "", []).append(t)
    results: list[SearchResult] = []
    errors: list[Exception] = []

    async def call(params: SearchParams) -> None:
        try:
            results.extend(await search.search(tenant_id, params))
        except Exception as exc:  # noqa: BLE001 - first error is reported, siblings keep their results
            errors.append(exc)

    async def group(key: str, members: list[SearchTarget]) -> None:
        embedding: list[float] | None = None
        disable_vector = False
        first = kbs.get(members[0].knowledge_base_id)
        if key and first is not None and first.indexing_strategy.vector_enabled:
            try:
                embedder = await search.embedders.get(first.embedding_model_id or None,
                                                      tenant_id=first.tenant_id)
                embedding = (await embedder.embed_query(engine_query(req.query))).tolist()
            except Exception as exc:  # noqa: BLE001 - degrade to keyword where a KB has a keyword index
                log.warning("query embedding failed, keyword only: %s", exc)
                disable_vector = True
                keep = []
                for t in members:
                    kb = kbs.get(t.knowledge_base_id)
                    if kb is not None and (kb.type == KBType.FAQ or not kb.indexing_strategy.keyword_enabled):
                        errors.append(AppError(f"knowledge base {kb.id} has no keyword fallback: {exc}"))
                    else:
                        keep.append(t)
                members = keep
        full = [t for t in members if t.type == "knowledge_base" and not t.tag_ids]
        calls = []
        if full:
            calls.append(SearchParams(
                knowledge_base_id=full[0].knowledge_base_id,
                knowledge_base_ids=[t.knowledge_base_id for t in full],
                query_text=req.query, query_embedding=embedding, vector_threshold=req.vector_threshold,
                keyword_threshold=req.keyword_threshold, match_count=req.match_count,
                skip_context_enrichment=True, disable_vector_match=disable_vector))
        for t in members:
            if t in full or (t.type == "knowledge" and not t.knowledge_ids):
                continue
            v, k = t.recall_thresholds(req.vector_threshold, req.keyword_threshold)
            calls.append(SearchParams(
                knowledge_base_id=t.knowledge_base_id, query_text=req.query, query_embedding=embedding,
                vector_threshold=v, keyword_threshold=k, match_count=req.match_count, tag_ids=t.tag_ids,
                scope_tag_ids=t.scope_tag_ids, knowledge_ids=t.knowledge_ids if t.type == "knowledge" else [],
                skip_context_enrichment=req.skip_context_enrichment, disable_vector_match=disable_vector))
        await asyncio.gather(*(call(p) for p in calls))

    await asyncio.gather(*(group(k, m) for k, m in groups.items()))
    return results, (errors[0] if errors else None)


def dedupe_results(results: Sequence[SearchResult]) -> list[SearchResult]:
    """One result per chunk id (the highest score), best first."""
    best: dict[str, SearchResult] = {}
    for r in results:
        if r.id not in best or r.score > best[r.id].score:
            best[r.id] = r
    return sorted(best.values(), key=lambda r: (-r.score, r.id))
