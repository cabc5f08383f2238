"""Wires the pipeline area: ``c.chat_models``, ``c.rerankers``, ``c.web_search``, ``c.graph_store``,
``c.page_fetcher`` and ``c.quick_answer`` (the quick-answer TurnRunner).

Model lookups read the ``models`` table through store-api's repository when it is wired; every other
dependency is optional so the runner degrades (skips a stage) rather than failing to start.
"""

from __future__ import annotations

import logging
from typing import Any

from knora.adapters.graph.sqlite_graph import SqlGraphStore
from knora.adapters.llm.registry import ChatModelRegistry, RerankerRegistry
from knora.adapters.websearch.fetch import PageFetcher
from knora.adapters.websearch.registry import build_web_search
from knora.domain.knowledge import Knowledge
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.runner import QuickAnswerRunner

log = logging.getLogger(__name__)


def _attr(c: Any, name: str) -> Any:
    try:
        return getattr(c, name)
    except AttributeError:
        return None


async def wire(c: Any) -> None:
    s = c.settings
    repos = _attr(c, "repos")
    model_rows = getattr(repos, "models", None) if repos is not None else None
    c.chat_models = ChatModelRegistry(s, model_rows)
    c.rerankers = RerankerRegistry(s, model_rows)
    c.on_close(c.chat_models.close)
    c.on_close(c.rerankers.close)
    try:
        c.web_search = build_web_search(s.web_search_provider, s.web_search_base_url, s.web_search_api_key)
    except ValueError as exc:
        log.warning("web search disabled: %s", exc)
        c.web_search = None
    if c.web_search is not None and hasattr(c.web_search, "close"):
        c.on_close(c.web_search.close)
    c.graph_store = SqlGraphStore(c.sessions)
    c.page_fetcher = PageFetcher(allow_private=s.allow_private_network_fetch)
    c.on_close(c.page_fetcher.close)

    search = _attr(c, "search_service")
    reads = getattr(search, "store", None)
    if reads is None:
        from knora.adapters.db.repos.search_reads import SqlSearchReads

        reads = SqlSearchReads(c.sessions)
        c.on_close(reads.close)
    blobs = _attr(c, "blobs")
    knowledge_repo = getattr(repos, "knowledge", None) if repos is not None else None

    async def list_documents(tenant_id: int, kb_id: str, limit: int) -> list[Knowledge]:
        if knowledge_repo is None:
            return []
        page = await knowledge_repo.list(tenant_id, kb_id, page=1, page_size=limit)
        return list(page.items)

    deps = PipelineDeps(chat_models=c.chat_models, rerankers=c.rerankers, search=search, reads=reads,
                        web_search=c.web_search, graph_store=c.graph_store, fetch_page=c.page_fetcher,
                        read_blob=blobs.get if blobs is not None else None,
                        list_documents=list_documents if knowledge_repo is not None else None,
                        list_kbs=getattr(_attr(c, "kb_service"), "list", None))
    c.pipeline_deps = deps
    c.quick_answer = QuickAnswerRunner(deps)
