"""Wires the retrieval area: ``c.retrieval`` (engine by settings), ``c.search_service``, ``c.faq_service``.

One engine serves every KB today; ``HybridSearch`` takes a per-KB resolver so a KB bound to another store
(``vector_store_id``) can get its own engine later without touching the service.
"""

from __future__ import annotations

from typing import Any

from knora.adapters.db.repos.faq import SqlFaqRepo
from knora.adapters.db.repos.search_reads import SqlSearchReads
from knora.adapters.retrieval.registry import build_engine
from knora.domain.knowledge import KnowledgeBase
from knora.ports.retrieval import RetrievalEngine
from knora.services.retrieval.faq import FaqService
from knora.services.retrieval.hybrid import HybridSearch


async def wire(c: Any) -> None:
    engine = build_engine(c.settings.effective_retrieval_engine, c.settings)
    await engine.start()
    c.retrieval = engine
    c.on_close(engine.close)

    def engine_for(_kb: KnowledgeBase) -> RetrievalEngine:
        return c.retrieval  # type: ignore[no-any-return]

    def default_embedder() -> str:
        return str(c.settings.embedder)

    reads = SqlSearchReads(c.sessions)
    c.on_close(reads.close)
    c.search_service = HybridSearch(reads, c.embedders, engine_for,
                                    default_embedder=default_embedder)
    c.faq_service = FaqService(SqlFaqRepo(c.sessions), c.search_service, lambda: c.retrieval, c.embedders)
