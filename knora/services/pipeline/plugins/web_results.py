"""Web search hits → SearchResult (spec §3.9): each page its own document, score 0.6, match type
web_search."""

from __future__ import annotations

from collections.abc import Sequence

from knora.domain.search import MatchType, SearchResult
from knora.ports.websearch import WebResult


def web_to_search_results(results: Sequence[WebResult]) -> list[SearchResult]:
    out: list[SearchResult] = []
    for i, r in enumerate(results):
        rid = r.url or f"web_search_{i}"
        content = "\n\n".join(p for p in (r.title, r.snippet, r.content) if p)
        meta = {"url": r.url, "source": r.source, "title": r.title, "snippet": r.snippet}
        if r.published_at:
            meta["published_at"] = r.published_at
        out.append(SearchResult(id=rid, knowledge_id=rid, content=content, knowledge_title=r.title,
                                start_at=0,
                                end_at=len(content), seq=1, score=0.6, match_type=MatchType.WEB_SEARCH,
                                metadata=meta, chunk_type="web_search", knowledge_source="web_search"))
    return out
