"""Search API: POST /knowledge-search and POST|GET /knowledge-bases/:id/hybrid-search (WeKnora field names).

Results are WeKnora SearchResult objects plus ``scores`` ({vector, keyword, fused[, rerank]}) and
``match_type``, so a debug view can show why each chunk came back. Limits: an empty or > 100 kB query is a
400; thresholds outside [0, 1] are a 400; ``match_count`` ≤ 0 means 50 and values above 500 are clamped to
500.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import RerankersDep, SearchServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.search import HybridSearchBody, KnowledgeSearchBody
from knora.api.serializers import results_json
from knora.domain.errors import BadRequest
from knora.domain.search import SearchParams, SearchResult
from knora.ports.reranker import Rerankers
from knora.services.retrieval.hybrid import MAX_QUERY_BYTES, effective_config
from knora.services.retrieval.targets import TargetSearch, build_targets, dedupe_results, search_targets

router = APIRouter(tags=["search"])


# One route per method (not ``api_route(methods=[...])``) so that each gets its own OpenAPI operation id.
@router.post("/knowledge-bases/{kb_id}/hybrid-search", response_model=Envelope[list[SearchResult]],
             openapi_extra=request_body(HybridSearchBody))
@router.get("/knowledge-bases/{kb_id}/hybrid-search", response_model=Envelope[list[SearchResult]],
            openapi_extra=request_body(HybridSearchBody))
async def hybrid_search(kb_id: str, request: Request, search_service: SearchServiceDep,
                        tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, HybridSearchBody)
    scope = body.knowledge_base_ids or [kb_id]
    if kb_id not in scope:
        scope = [kb_id, *scope]
    params = SearchParams(knowledge_base_id=kb_id, knowledge_base_ids=scope, **body.model_dump(
        exclude={"knowledge_base_ids"}))
    results = await search_service.search(tenant_id, params)
    return ok(results_json(results))


def _mentions(body: KnowledgeSearchBody) -> tuple[list[str], list[str], list[str]]:
    kbs = [*([body.knowledge_base_id] if body.knowledge_base_id else []), *body.knowledge_base_ids]
    docs = list(body.knowledge_ids)
    tags = list(body.tag_ids)
    for item in body.mentioned_items:
        kind, item_id = str(item.get("type", "")), str(item.get("id", ""))
        if not item_id:
            continue
        if kind in ("kb", "knowledge_base"):
            kbs.append(item_id)
        elif kind in ("file", "knowledge", "document"):
            docs.append(item_id)
        elif kind == "tag":
            tags.append(item_id)
    return kbs, docs, tags


@router.post("/knowledge-search", response_model=Envelope[list[SearchResult]],
             openapi_extra=request_body(KnowledgeSearchBody))
async def knowledge_search(request: Request, search_service: SearchServiceDep, rerankers: RerankersDep,
                           tenant_id: TenantDep) -> JSONResponse:
    """Spec §1.10: retrieval (+ rerank when a reranker is configured), no LLM."""
    body = await read_body(request, KnowledgeSearchBody)
    query = body.query.strip()
    if not query:
        raise BadRequest("query must not be empty")
    if len(query.encode()) > MAX_QUERY_BYTES:
        raise BadRequest(f"query is longer than {MAX_QUERY_BYTES} bytes")
    kb_ids, doc_ids, tag_ids = _mentions(body)
    if not (kb_ids or doc_ids or tag_ids):
        raise BadRequest("at least one of knowledge_base_id(s), knowledge_ids or tag_ids is required")
    search = search_service
    scopes: dict[str, list[str]] = {}
    for tag, kb in (await search.store.tag_kbs(tag_ids)).items():
        scopes.setdefault(kb, []).append(tag)
    targets = await build_targets(search, tenant_id, kb_ids, doc_ids, scopes)
    if not targets:
        return ok([])
    tenant_cfg = await search.store.tenant_retrieval_config(tenant_id)
    first = (await search.store.knowledge_bases([targets[0].knowledge_base_id]))[0]
    cfg = effective_config(first, tenant_cfg)
    top_k = int(tenant_cfg.get("embedding_top_k") or 50)
    results, err = await search_targets(search, tenant_id, targets, TargetSearch(
        query=query, vector_threshold=float(tenant_cfg.get("vector_threshold", 0.15)),
        keyword_threshold=cfg.keyword_threshold, match_count=top_k))
    if err is not None and not results:
        raise err
    ranked = dedupe_results(results)
    ranked = await _rerank(rerankers, query, ranked, cfg.rerank_threshold, cfg.rerank_top_k)
    return ok(results_json(ranked))


async def _rerank(rerankers: Rerankers, query: str, results: list[SearchResult], threshold: float,
                  top_k: int) -> list[SearchResult]:
    """Rerank with the configured reranker if there is one; otherwise keep retrieval order."""
    if not results:
        return results[:top_k]
    reranker = await rerankers.get(None)
    if reranker is None:
        return results[:top_k]
    try:
        scores = await reranker.rerank(query, [r.content for r in results])
    except Exception:  # noqa: BLE001 - fail open to retrieval order (spec §2.9)
        return results[:top_k]
    kept = [results[s.index].model_copy(update={"score": s.score, "scores": {**results[s.index].scores,
                                                                            "rerank": s.score}})
            for s in scores if s.score >= threshold]
    return (kept or results)[:top_k]
