"""``knowledge_search``: hybrid search over the turn's knowledge scope, then rerank (spec §6.13).

Numbers follow WeKnora's agent path (``config.yaml`` conversation values, not the agent's retrieval settings):
top-k 30 per query, rerank threshold 0.3 with a top-1 fallback when the best score is at least 0.15; the
recall thresholds are Knora's measured defaults (WeKnora's 0.2 / 0.3 cost recall, docs/retrieval.md).
Without a rerank model the fused scores order the hits.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, need, result_row
from knora.domain.knowledge import DEFAULT_KEYWORD_THRESHOLD, DEFAULT_VECTOR_THRESHOLD
from knora.domain.search import SearchParams, SearchResult
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

log = logging.getLogger(__name__)
TOP_K, RERANK_T, RERANK_FLOOR, MAX_RESULTS = 30, 0.3, 0.15, 10


class KnowledgeSearchTool(BaseTool):
    name = "knowledge_search"
    description = ("Semantic search over the bound knowledge bases. Give 1-5 short, focused queries "
                   "(rephrase the question several ways). Returns the most relevant chunks with their "
                   "handles for citing.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "queries": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
        "knowledge_base_ids": {"type": "array", "items": {"type": "string"}, "maxItems": 10,
                               "description": "Optional knowledge base handles (bN) to narrow the search"}},
        "required": ["queries"]}

    async def _kb_ids(self, ctx: ToolContext, requested: list[str]) -> list[str]:
        ids = list(ctx.knowledge_base_ids)
        for kid in ctx.knowledge_ids:
            k = await self.deps.repos.knowledge.get(ctx.tenant_id, kid) if self.deps.repos else None
            if k is not None and k.knowledge_base_id not in ids:
                ids.append(k.knowledge_base_id)
        narrowed = [i for i in requested if i in ids]
        return narrowed or ids

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        queries = [q.strip() for q in args["queries"] if q and q.strip()]
        if not queries:
            return ToolResult.fail("queries must contain at least one non-empty query")
        kb_ids = await self._kb_ids(ctx, list(args.get("knowledge_base_ids") or []))
        if not kb_ids:
            return ToolResult.fail("no knowledge base is in scope for this turn")
        hits: dict[str, tuple[SearchResult, str]] = {}
        for q in queries:
            params = SearchParams(query_text=q, knowledge_base_ids=kb_ids,
                                  knowledge_ids=list(ctx.knowledge_ids),
                                  tag_ids=list(ctx.tag_ids), match_count=TOP_K,
                                  vector_threshold=DEFAULT_VECTOR_THRESHOLD,
                                  keyword_threshold=DEFAULT_KEYWORD_THRESHOLD)
            for r in await need(self.deps.search_service, "knowledge search").search(ctx.tenant_id, params):
                key = r.id
                if key not in hits or r.score > hits[key][0].score:
                    hits[key] = (r, q)
        ranked = await self._rerank(" ".join(queries), [h for h in hits.values()], ctx)
        seen: set[str] = ctx.state.setdefault("seen_chunks", set())
        rows = []
        for r, q in ranked[:MAX_RESULTS]:
            rows.append(result_row(r, source_query=q, already_seen=r.id in seen))
            seen.add(r.id)
        data: dict[str, Any] = {"display_type": "search_results", "queries": queries, "results": rows,
                                "result_count": len(rows), "knowledge_base_ids": kb_ids}
        if not rows:
            text = (f"No relevant content found in {len(kb_ids)} knowledge base(s).\n\n"
                    "CRITICAL - Next Steps:\n"
                    "- Do not answer from training data.\n- Try other wording or keyword search"
                    + (", or web search" if ctx.web_search_enabled else "")
                    + ".\n- If nothing turns up, tell the user the knowledge base has no answer.")
            return ToolResult(output=text, data={**data, "display_type": "", "model_note": ""})
        lines = [f"Found {len(rows)} result(s) for {', '.join(queries)}:"]
        lines += [f"[{i + 1}] {row['knowledge_title']} #{row['chunk_index']} (score {row['score']}): "
                  f"{row['content'][:200]}" for i, row in enumerate(rows)]
        return ToolResult(output="\n".join(lines), data=data)

    async def _rerank(self, query: str, hits: list[tuple[SearchResult, str]],
                      ctx: ToolContext) -> list[tuple[SearchResult, str]]:
        hits.sort(key=lambda h: (-h[0].score, h[0].knowledge_id, h[0].chunk_index))
        reranker = None
        if self.deps.rerankers is not None:
            try:
                reranker = await self.deps.rerankers.get(ctx.rerank_model_id, tenant_id=ctx.tenant_id)
            except Exception:
                log.debug("no reranker", exc_info=True)
        if reranker is None or not hits:
            return hits
        try:
            scores = await reranker.rerank(query, [h[0].content for h in hits])
        except Exception:
            log.warning("rerank failed; keeping fused order", exc_info=True)
            return hits
        ordered = [(hits[s.index][0].model_copy(update={"score": s.score, "scores": {
            **hits[s.index][0].scores, "rerank": s.score}}), hits[s.index][1]) for s in scores]
        kept = [h for h in ordered if h[0].score >= RERANK_T]
        if not kept and ordered and ordered[0][0].score >= RERANK_FLOOR:
            kept = ordered[:1]
        return kept


def make(deps: ToolDeps) -> KnowledgeSearchTool | None:
    return KnowledgeSearchTool(deps) if deps.search_service is not None else None
