"""``chunk_search`` (spec §2.6): KB hybrid search over the turn's targets and web search, concurrently, then
local query expansion when recall is short. Registered for the ``rag`` preset; the live chain runs it inside
``chunk_search_parallel``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from knora.domain.search import SearchResult
from knora.ports.turn import TurnContext
from knora.ports.websearch import resolve_web_search
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_SEARCH, ERR_SEARCH_NOTHING, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.plugins.web_results import web_to_search_results
from knora.services.pipeline.state import ChatManage, EventType

log = logging.getLogger(__name__)


async def _kb_search(deps: PipelineDeps, cm: ChatManage) -> tuple[list[SearchResult], Exception | None]:
    req = cm.request
    if deps.search is None or not req.search_targets:
        return [], None
    from knora.services.retrieval.targets import TargetSearch, search_targets

    return await search_targets(cm.search_or(deps.search), req.tenant_id, req.search_targets,
                                TargetSearch(query=cm.search_query, vector_threshold=req.vector_threshold,
                                             keyword_threshold=req.keyword_threshold,
                                             match_count=req.embedding_top_k))


async def _web_search(deps: PipelineDeps, cm: ChatManage) -> list[SearchResult]:
    web = (await resolve_web_search(cm.request.tenant_id, deps.web_search, deps.web_searches)
           if cm.request.web_search_enabled else None)
    if web is None:
        if cm.request.web_search_enabled:
            log.warning("web_config_missing: web search requested but no provider is configured")
        return []
    try:
        found = await web.search(cm.search_query,
                                             max_results=cm.request.web_search_max_results or 10)
    except Exception as exc:  # noqa: BLE001 - spec: web errors mean no web results
        log.warning("web search failed: %s", exc)
        cm.note("web_search", error=str(exc))
        return []
    return web_to_search_results(found)


async def run_chunk_search(deps: PipelineDeps, cm: ChatManage) -> PluginError | None:
    """Fills ``cm.state.search_result``; returns an error value or None (the caller decides about
    ``next``)."""
    req = cm.request
    if not req.has_kb_scope and not req.web_search_enabled:
        return None
    (kb_results, kb_error), web_results = await asyncio.gather(_kb_search(deps, cm), _web_search(deps, cm))
    results = [*kb_results, *web_results]
    if kb_error is not None and not results:
        return ERR_SEARCH.with_error(kb_error)
    if kb_error is not None:
        log.warning("partial search failure: %s", kb_error)
    if (req.enable_query_expansion and deps.search is not None and req.search_targets
            and len(results) < max(1, req.embedding_top_k) and not cm.cancelled):
        from knora.services.retrieval.expansion import run_query_expansion

        extra = await run_query_expansion(cm.search_or(deps.search), req.tenant_id, req.search_targets,
                                          rewrite_query=cm.search_query, original_query=req.query,
                                          vector_threshold=req.vector_threshold,
                                          keyword_threshold=req.keyword_threshold,
                                          embedding_top_k=req.embedding_top_k, rerank_top_k=req.rerank_top_k)
        cm.note("chunk_search", expansion_hits=len(extra))
        results.extend(extra)
    cm.state.search_result = results
    cm.note("chunk_search", kb_hits=len(kb_results), web_hits=len(web_results))
    return None if results else ERR_SEARCH_NOTHING


class ChunkSearch:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHUNK_SEARCH,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if not cm.needs_retrieval:
            return await next()
        err = await run_chunk_search(self._deps, cm)
        if err is not None:
            return err
        return await next()
