"""``knora search --kb NAME "query"``: hybrid search from the terminal, with the per-path scores.

Registered by ``knora.cli.main`` through ``register(subparsers)``; runs against the same data dir / database
as the server (the embedded engine notices rows other processes wrote).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from knora.domain.errors import AppError
from knora.domain.search import SearchParams, SearchResult


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser("search", help="search knowledge bases (hybrid)")
    p.add_argument("query", help="the question or keywords")
    p.add_argument("--kb", action="append", required=True, metavar="NAME",
                   help="knowledge base name or id (repeat for several)")
    p.add_argument("-k", "--top-k", type=int, default=10, help="results to show (clamped to 1..500)")
    p.add_argument("--vector-threshold", type=float, default=None)
    p.add_argument("--keyword-threshold", type=float, default=None)
    p.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    p.add_argument("--json", action="store_true", help="print the SearchResult list as JSON")
    p.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    from knora.cli._common import fail, find_kb, running_services

    async with running_services() as c:
        ids = []
        for ref in args.kb:
            kb = await find_kb(c, ref)
            if kb is None:
                return fail(f"knowledge base {ref!r} not found")
            ids.append(kb.id)
        params = SearchParams(knowledge_base_id=ids[0], knowledge_base_ids=ids, query_text=args.query,
                              match_count=args.top_k, vector_threshold=args.vector_threshold,
                              keyword_threshold=args.keyword_threshold, skip_context_enrichment=True,
                              disable_vector_match=args.mode == "keyword",
                              disable_keywords_match=args.mode == "vector")
        try:
            results = await c.search_service.search(c.default_tenant_id, params)
        except AppError as exc:
            return fail(exc.message, 2)
        print(json.dumps([r.model_dump(mode="json") for r in results], ensure_ascii=False, indent=2)
              if args.json else format_results(results))
        return 0


def format_results(results: list[SearchResult]) -> str:
    if not results:
        return "no results"
    lines = []
    for i, r in enumerate(results, 1):
        s = r.scores
        parts = " ".join(f"{k}={s[k]:.3f}" for k in ("vector", "keyword", "fused", "rerank") if k in s)
        title = r.knowledge_title or r.knowledge_filename or r.knowledge_id
        snippet = " ".join(r.content.split())[:200]
        lines.append(f"{i:>2}. [{r.score:.4f}] {title} #{r.chunk_index}  ({parts})\n    {snippet}")
    return "\n".join(lines)
