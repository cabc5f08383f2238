"""HybridSearch (spec §3.1–3.7): authorise, embed once, fan out to engines, fuse, apply FAQ rules, hydrate.

Every search path (chat pipeline, agent tool, search API) ends here, so input limits live here too: an empty
or over-long query is a 400, thresholds outside [0, 1] are a 400, ``match_count`` is clamped to [1, 500] (≤ 0
means the default 50), and a KB of another tenant is reported exactly like a missing one (404).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from knora.domain.errors import AppError, BadRequest, NotFound, Unavailable, ValidationFailed
from knora.domain.knowledge import KBType, KnowledgeBase, RetrievalConfig
from knora.domain.search import EngineHit, MatchType, SearchParams, SearchResult
from knora.ports.retrieval import EngineQuery, RetrievalEngine
from knora.ports.search_store import SearchStore
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID, EmbedderRegistry
from knora.services.retrieval import faq_rules
from knora.services.retrieval.bounds import engine_query
from knora.services.retrieval.fusion import FusionConfig, dedupe_by_score, fuse
from knora.services.retrieval.hydrate import Hit, hydrate
from knora.services.retrieval.shared import readable
from knora.services.retrieval.turn_reads import TurnReads

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 50
MAX_POOL = 500
MAX_QUERY_BYTES = 100_000
FANOUT_LIMIT = 4


@dataclass
class _Group:
    engine: RetrievalEngine
    tenant_id: int
    queries: list[EngineQuery] = field(default_factory=list)


def effective_config(kb: KnowledgeBase, tenant_config: dict[str, Any]) -> RetrievalConfig:
    """The KB's RetrievalConfig with the tenant's saved values on top (``/tenants/kv/retrieval-config``)."""
    merged = kb.retrieval_config.model_dump()
    merged.update({k: v for k,
                   v in tenant_config.items() if k in RetrievalConfig.model_fields and v is not None})
    return RetrievalConfig.model_validate(merged)


def check_threshold(name: str, value: float | None) -> None:
    if value is not None and (math.isnan(value) or not 0.0 <= value <= 1.0):
        raise ValidationFailed(f"{name} must be between 0 and 1, got {value}")


def clamp_match_count(n: int) -> int:
    return DEFAULT_TOP_K if n <= 0 else min(n, MAX_POOL)


def candidate_pool(match_count: int, kbs: int) -> int:
    """Candidates asked of each path: ``max(match_count, 50)`` per knowledge base, at most 500.

    WeKnora over-recalls 5 × match_count for its RRF, where ranks past the top barely count. Knora's convex
    fusion min-max-normalises each list, so the pool sets the scale: the ablation in ``docs/retrieval.md``
    found 1× the best mean nDCG@10 over cranfield and both XQuAD sets with the default embedder (0.7896 vs
    0.7884 at 5×), at a fraction of the cost (the engines fetch and the fusion sorts every candidate).
    """
    return min(max(match_count, 50) * kbs, MAX_POOL)


class HybridSearch:
    def __init__(self, store: SearchStore, embedders: EmbedderRegistry, engine_for: Callable[[KnowledgeBase],
                                                                                RetrievalEngine], *,
                 group_timeout: float = 30.0, default_embedder: Callable[[], str] | None = None) -> None:
        self.store = store
        self.embedders = embedders
        self.engine_for = engine_for
        self.group_timeout = group_timeout
        self._default_embedder = default_embedder or (lambda: "")

    def with_store(self, store: SearchStore) -> HybridSearch:
        """The same search reading through ``store`` (a request's ``TurnReads`` view); engines etc. shared."""
        view = copy.copy(self)
        view.store = store
        return view

    # --- validation and scope -------------------------------------------------------------------------------
    @staticmethod
    def validate(params: SearchParams) -> str:
        text = params.query_text.strip()
        if not text:
            raise BadRequest("query_text must not be empty")
        if len(text.encode()) > MAX_QUERY_BYTES:
            raise BadRequest(f"query is longer than {MAX_QUERY_BYTES} bytes")
        check_threshold("vector_threshold", params.vector_threshold)
        check_threshold("keyword_threshold", params.keyword_threshold)
        return text

    def model_key(self, kb: KnowledgeBase) -> str:
        """The embedder a knowledge base's vectors come from; the built-in model id and the settings' spec
        (stored before issue 13) are one embedder."""
        if not kb.embedding_model_id or kb.embedding_model_id == BUILTIN_EMBEDDING_MODEL_ID:
            return self._default_embedder()
        return kb.embedding_model_id

    async def load_scope(self, tenant_id: int, params: SearchParams) -> tuple[KnowledgeBase,
                                                                              list[KnowledgeBase]]:
        scope = list(dict.fromkeys(params.knowledge_base_ids or [params.knowledge_base_id]))
        scope = [s for s in scope if s]
        if not scope:
            raise BadRequest("a knowledge base id is required")
        primary_id = params.knowledge_base_id or scope[0]
        kbs = await readable(self.store, tenant_id, await self.store.knowledge_bases(scope))
        if len(kbs) != len(scope):
            raise NotFound("knowledge base not found")
        keys = {self.model_key(kb) for kb in kbs if kb.indexing_strategy.vector_enabled}
        if len(kbs) > 1 and len(keys) > 1:
            raise BadRequest("selected knowledge bases use different embedding models; multi-KB search "
                             "requires every knowledge base to share a single embedding model")
        primary = next((kb for kb in kbs if kb.id == primary_id), None)
        if primary is None:
            raise NotFound("knowledge base not found")
        return primary, kbs

    # --- the search -----------------------------------------------------------------------------------------
    async def search(self, tenant_id: int, params: SearchParams) -> list[SearchResult]:
        # a request's view (the chat pipeline passes its own), else one for this call: the KBs and the
        # tenant's config then come in one read
        view = self if isinstance(self.store, TurnReads) else self.with_store(TurnReads(self.store,
                                                                                        tenant_id=tenant_id))
        return await view._search(tenant_id, params)

    async def _search(self, tenant_id: int, params: SearchParams) -> list[SearchResult]:
        text = engine_query(self.validate(params))  # the engines see a bounded query (``bounds``)
        primary, kbs = await self.load_scope(tenant_id, params)
        cfg = effective_config(primary, await self.store.tenant_retrieval_config(tenant_id))
        if params.fusion:
            cfg = cfg.model_copy(update={"fusion": params.fusion})
        match_count = clamp_match_count(params.match_count)
        pool = candidate_pool(match_count, len(kbs))
        v_th = params.vector_threshold if params.vector_threshold is not None else cfg.vector_threshold
        k_th = params.keyword_threshold if params.keyword_threshold is not None else cfg.keyword_threshold

        embedding = params.query_embedding
        wants_vector = not params.disable_vector_match and any(
            kb.indexing_strategy.vector_enabled for kb in kbs)
        if embedding is None and wants_vector:
            try:
                embedder = await self.embedders.get(primary.embedding_model_id or None,
                                                    tenant_id=primary.tenant_id)
                embedding = (await embedder.embed_query(text)).tolist()
            except AppError:
                raise
            except Exception as exc:
                raise Unavailable(f"query embedding failed: {exc}") from exc

        groups = self._groups(kbs, params, text, embedding, v_th, k_th, pool)
        if not groups:
            return []
        vec_hits, kw_hits = await self._retrieve(groups)
        if not vec_hits and not kw_hits:
            return []
        faq = primary.type == KBType.FAQ  # FAQ rules drop negative matches: they need every candidate
        hits = self._fuse(vec_hits, kw_hits, cfg, limit=None if faq else match_count)
        if faq:
            hits = await faq_rules.post_process(self, hits, vec_hits, groups, text, match_count, pool)
        hits = hits[:match_count]
        owners = {tenant_id} | {kb.tenant_id for kb in kbs}  # a shared KB's chunks are its owner's
        return await hydrate(self.store, owners, hits, enrich=not params.skip_context_enrichment)

    def _groups(self, kbs: Sequence[KnowledgeBase], params: SearchParams, text: str,
                embedding: list[float] | None,
                v_th: float, k_th: float, pool: int) -> list[_Group]:
        """Spec §3.2: partition KBs by (engine, owner tenant); per group up to three engine queries."""
        buckets: dict[tuple[int, int], tuple[RetrievalEngine, int, list[KnowledgeBase]]] = {}
        for kb in kbs:
            eng = self.engine_for(kb)
            buckets.setdefault((id(eng), kb.tenant_id), (eng, kb.tenant_id, []))[2].append(kb)
        common: dict[str, Any] = {"knowledge_ids": params.knowledge_ids, "tag_ids": params.tag_ids,
                                  "top_k": pool,
                  "only_recommended": params.only_recommended}
        groups: list[_Group] = []
        for eng, tenant, members in buckets.values():
            g = _Group(eng, tenant)
            caps = eng.capabilities
            vec_docs = [kb.id for kb in members
                        if kb.indexing_strategy.vector_enabled and kb.type != KBType.FAQ]
            vec_faq = [kb.id for kb in members
                       if kb.indexing_strategy.vector_enabled and kb.type == KBType.FAQ]
            kw_docs = [kb.id for kb in members
                       if kb.indexing_strategy.keyword_enabled and kb.type != KBType.FAQ]
            if "vector" in caps and not params.disable_vector_match and embedding is not None:
                if vec_docs:
                    g.queries.append(EngineQuery(mode="vector", knowledge_base_ids=vec_docs,
                                                 embedding=embedding,
                                                 threshold=v_th, **common))
                if vec_faq:
                    g.queries.append(EngineQuery(mode="vector", knowledge_base_ids=vec_faq,
                                                 embedding=embedding,
                                                 threshold=v_th, knowledge_type="faq", **common))
            if "keyword" in caps and not params.disable_keywords_match and kw_docs:
                g.queries.append(EngineQuery(mode="keyword", knowledge_base_ids=kw_docs, text=text,
                                             threshold=k_th,
                                             **common))
            if g.queries:
                groups.append(g)
        return groups

    async def run_group(self, g: _Group, *, top_k: int | None = None) -> list[tuple[str, list[EngineHit]]]:
        qs = [q.model_copy(update={"top_k": top_k}) if top_k else q for q in g.queries]
        results = await asyncio.gather(*(g.engine.search(q) for q in qs))
        return [(g.engine.name, r) for r in results]

    async def _retrieve(self, groups: list[_Group], *, top_k: int | None = None
                        ) -> tuple[list[EngineHit], list[EngineHit]]:
        """Spec §3.3: one group runs directly; several run 4 at a time, each under a timeout,
        all-or-nothing."""
        started = time.perf_counter()
        if len(groups) == 1:
            per_group = [await self.run_group(groups[0], top_k=top_k)]
        else:
            sem = asyncio.Semaphore(FANOUT_LIMIT)

            async def one(g: _Group) -> list[tuple[str, list[EngineHit]]]:
                async with sem:
                    return await asyncio.wait_for(self.run_group(g, top_k=top_k), self.group_timeout)

            try:
                per_group = list(await asyncio.gather(*(one(g) for g in groups)))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise AppError("vector retrieval failed for one or more bound stores", status=503,
                               code=2201) from exc
        nonempty = [r for r in per_group if any(hits for _, hits in r)]
        mixed = len(nonempty) > 1 and len({name for r in nonempty for name, _ in r}) > 1
        vec: list[EngineHit] = []
        kw: list[EngineHit] = []
        for r in per_group:
            for _name, hits in r:
                for h in hits:
                    if h.match_type == MatchType.EMBEDDING:
                        if mixed:  # spec §3.4: heterogeneous engines → vector scores clamped to [0, 1]
                            s = 0.0 if math.isnan(h.score) else min(max(h.score, 0.0), 1.0)
                            h = h.model_copy(update={"score": s})
                        vec.append(h)
                    else:
                        kw.append(h)
        vec.sort(key=lambda h: -h.score)
        kw.sort(key=lambda h: -h.score)
        log.debug("retrieved %d vector / %d keyword rows in %.1f ms", len(vec), len(kw),
                  (time.perf_counter() - started) * 1000)
        return vec, kw

    @staticmethod
    def _fuse(vec: list[EngineHit], kw: list[EngineHit], cfg: RetrievalConfig, *,
              limit: int | None = None) -> list[Hit]:
        """Fused hits, best first, the first ``limit`` of them. Keyword scores arrive uncapped (BM25 ÷ Σ idf:
        capped at 1, several top hits would tie before min-max); they are shown capped, as documented."""
        best_v: dict[str, EngineHit] = {}
        best_k: dict[str, EngineHit] = {}
        for h in vec:
            if h.chunk_id not in best_v or h.score > best_v[h.chunk_id].score:
                best_v[h.chunk_id] = h
        for h in kw:
            if h.chunk_id not in best_k or h.score > best_k[h.chunk_id].score:
                best_k[h.chunk_id] = h
        if vec and kw:
            fused = fuse(cfg.fusion, [(h.chunk_id, h.score) for h in vec], [(h.chunk_id,
                                                                             h.score) for h in kw],
                         FusionConfig(k=cfg.rrf_k, vector_weight=cfg.vector_weight,
                                      keyword_weight=cfg.keyword_weight, alpha=cfg.convex_alpha))
        else:
            fused = dedupe_by_score([(h.chunk_id, h.score) for h in (vec or kw)])
        out: list[Hit] = []
        for cid, score in fused[:limit]:
            hv, hk = best_v.get(cid), best_k.get(cid)
            src = hv or hk
            assert src is not None
            if not vec:  # a keyword-only search: its score is the keyword score, shown capped
                score = min(score, 1.0)
            scores = {"fused": score}
            if hv is not None:
                scores["vector"] = hv.score
            if hk is not None:
                scores["keyword"] = min(hk.score, 1.0)
            out.append(Hit(cid, score, int(src.match_type), src.content, scores))
        return out
