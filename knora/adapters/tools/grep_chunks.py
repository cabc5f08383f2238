"""``grep_chunks``: case-insensitive regex over chunk text and document titles in scope (spec §6.14).

The pattern is the model's, so it is untrusted: it runs on RE2 (``_safe_regex``), linear in the text, never
on Python's backtracking ``re``, which a pattern like ``^(a+)+$`` could keep busy for minutes on the loop.

Scans the scope's chunks through the store's chunk repository (capped), scores hits like WeKnora (body hit
1.0 + an early-position bonus, +0.5 for a title hit) and keeps the best 30.
"""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, scope_knowledge
from knora.adapters.tools._safe_regex import UnsafePatternError, compile_untrusted
from knora.ports.tool import ToolContext, ToolDeps, ToolResult

LIMIT, SCAN_CAP, SNIPPET = 30, 20000, 120


class GrepChunksTool(BaseTool):
    name = "grep_chunks"
    description = ("Keyword search: find chunks whose text (or document title) matches a case-insensitive "
                   "regular expression. Best for exact names, numbers, codes and phrases.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "query": {"type": "string", "description": (
            "One regular expression (RE2 syntax: no back-references or look-around), "
            "e.g. 'error 4\\d\\d|timeout'")}},
        "required": ["query"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = str(args.get("query") or "").strip()
        if not query:
            return ToolResult.fail("query parameter is required and must be a non-empty regex string")
        try:
            pattern = compile_untrusted(query, ignore_case=True)
        except UnsafePatternError as exc:
            return ToolResult.fail(f"invalid regex query {query!r}: {exc}")
        scanned, hits = 0, []
        for k in await scope_knowledge(self.deps, ctx):
            title_hit = bool(pattern.search(k.title or k.file_name or ""))
            page = 1
            while scanned < SCAN_CAP:
                got = await self.repos.chunks.list(ctx.tenant_id, k.id, page=page, page_size=500)
                for ch in got.items:
                    scanned += 1
                    if not ch.is_enabled:
                        continue
                    m = pattern.search(ch.content)
                    if not m and not title_hit:
                        continue
                    score = 1.0 + 0.1 * (1 - m.start() / max(len(ch.content), 1)) if m else 1.0
                    score = min(score, 1.0)
                    if title_hit:
                        score = min(score + 0.5, 1.0)
                    lo = max((m.start() if m else 0) - SNIPPET // 2, 0)
                    hits.append({"chunk_id": ch.id, "knowledge_id": k.id,
                                 "knowledge_base_id": k.knowledge_base_id,
                                 "knowledge_title": k.title or k.file_name, "chunk_index": ch.chunk_index,
                                 "chunk_type": str(ch.chunk_type), "match": ch.content[lo:lo + SNIPPET],
                                 "content": "", "score": round(score, 4), "title_match": title_hit,
                                 "chunk_metadata": dict(ch.metadata),
                                 "matched_patterns": 1 if (m or title_hit) else 0})
                if len(got.items) < 500:
                    break
                page += 1
        hits.sort(key=lambda h: (not h["title_match"], -h["matched_patterns"], -h["score"], h["chunk_index"]))
        hits = hits[:LIMIT]
        docs = {h["knowledge_id"] for h in hits}
        out = [f"{len(hits)} chunk(s) in {len(docs)} document(s) match /{query}/"]
        out += [f"- {h['knowledge_title']} #{h['chunk_index']}: {h['match']}" for h in hits]
        return ToolResult(output="\n".join(out), data={
            "display_type": "grep_results", "query": query, "results": hits, "result_count": len(hits),
            "document_count": len(docs), "max_results": LIMIT})


def make(deps: ToolDeps) -> GrepChunksTool | None:
    return GrepChunksTool(deps) if deps.repos is not None else None
