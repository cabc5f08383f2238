"""``knora search --kb NAME "query"``: hybrid search from the terminal, with the per-path scores.

Registered by ``knora.cli.main`` through ``register(subparsers)``. Through the running server's
``POST /knowledge-bases/:id/hybrid-search`` when one is up, else in-process against the same data dir /
database (the embedded engine notices rows other processes wrote).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from knora.cli._common import add_mode_flag, choose_mode, fail, find_kb, find_kb_json


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
    add_mode_flag(p)
    p.set_defaults(handler=run)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """The search's fields as ``HybridSearchBody`` / ``SearchParams`` name them."""
    return {"query_text": args.query, "match_count": args.top_k, "vector_threshold": args.vector_threshold,
            "keyword_threshold": args.keyword_threshold, "skip_context_enrichment": True,
            "disable_vector_match": args.mode == "keyword", "disable_keywords_match": args.mode == "vector"}


async def run(args: argparse.Namespace) -> int:
    server = choose_mode(args)
    if server is not None:
        from knora.cli.client import ApiClient, ApiError

        try:
            async with ApiClient(server) as api:
                kbs = await api.data("GET", "/knowledge-bases")
                ids = []
                for ref in args.kb:
                    found = find_kb_json(kbs, ref)
                    if found is None:
                        return fail(f"knowledge base {ref!r} not found")
                    ids.append(str(found["id"]))
                results: list[dict[str, Any]] = await api.data(
                    "POST", f"/knowledge-bases/{ids[0]}/hybrid-search",
                    json={**_params(args), "knowledge_base_ids": ids})
        except ApiError as exc:
            return fail(exc.message, 2 if 400 <= exc.status < 500 else 1)
    else:
        from knora.cli._common import running_services
        from knora.domain.errors import AppError
        from knora.domain.search import SearchParams

        async with running_services() as c:
            ids = []
            for ref in args.kb:
                kb = await find_kb(c, ref)
                if kb is None:
                    return fail(f"knowledge base {ref!r} not found")
                ids.append(kb.id)
            params = SearchParams(knowledge_base_id=ids[0], knowledge_base_ids=ids, **_params(args))
            try:
                found_results = await c.search_service.search(c.default_tenant_id, params)
            except AppError as exc:
                return fail(exc.message, 2)
            results = [r.model_dump(mode="json") for r in found_results]
    print(json.dumps(results, ensure_ascii=False, indent=2) if args.json else format_results(results))
    return 0


def format_results(results: list[dict[str, Any]]) -> str:
    """Search results (``SearchResult`` as JSON) as numbered lines with their scores and a snippet."""
    if not results:
        return "no results"
    lines = []
    for i, r in enumerate(results, 1):
        s = r.get("scores") or {}
        parts = " ".join(f"{k}={s[k]:.3f}" for k in ("vector", "keyword", "fused", "rerank") if k in s)
        title = r.get("knowledge_title") or r.get("knowledge_filename") or r.get("knowledge_id")
        snippet = " ".join(str(r.get("content", "")).split())[:200]
        lines.append(f"{i:>2}. [{float(r.get('score') or 0):.4f}] {title} #{r.get('chunk_index', 0)}  "
                     f"({parts})\n    {snippet}")
    return "\n".join(lines)
