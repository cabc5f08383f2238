"""``list_knowledge_chunks``: read a document's chunks in order, or one chunk in full (spec §6.14)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, in_scope
from knora.ports.tool import ToolContext, ToolDeps, ToolResult


class ListKnowledgeChunksTool(BaseTool):
    name = "list_knowledge_chunks"
    description = ("Read a document in full, page by page (knowledge_id = a document handle dN), or read one "
                   "chunk (chunk_id / faq_id = a chunk handle cN). Use after a search hit looks relevant.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "knowledge_id": {"type": "string"}, "chunk_id": {"type": "string"}, "faq_id": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        "offset": {"type": "integer", "minimum": 0, "default": 0}}}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        given = [k for k in ("knowledge_id", "chunk_id", "faq_id") if args.get(k)]
        if len(given) != 1:
            return ToolResult.fail("give exactly one of knowledge_id, chunk_id or faq_id")
        repos = self.repos
        if given[0] != "knowledge_id":
            ch = await repos.chunks.get(ctx.tenant_id, str(args[given[0]]))
            k = await repos.knowledge.get(ctx.tenant_id, ch.knowledge_id) if ch else None
            if ch is None or not in_scope(ctx, k):
                return ToolResult.fail(f"chunk not found: {args[given[0]]}")
            chunks, total, offset = [ch], 1, 0
        else:
            k = await repos.knowledge.get(ctx.tenant_id, str(args["knowledge_id"]))
            if k is None or not in_scope(ctx, k):
                return ToolResult.fail(f"document not found: {args['knowledge_id']}")
            limit, offset = int(args.get("limit") or 20), int(args.get("offset") or 0)
            page = offset // limit + 1
            got = await repos.chunks.list(ctx.tenant_id, k.id, page=page, page_size=limit,
                                          chunk_types=["text", "faq"])
            chunks, total = list(got.items), got.total
        assert k is not None  # in_scope() refused None above
        rows = [{"chunk_id": c.id, "knowledge_id": k.id, "knowledge_base_id": k.knowledge_base_id,
                 "knowledge_title": k.title or k.file_name, "chunk_index": c.chunk_index,
                 "chunk_type": str(c.chunk_type), "content": c.content, "chunk_metadata": dict(c.metadata)}
                for c in chunks]
        size = len(rows) or 1
        data = {"display_type": "knowledge_chunks_list", "results": rows, "total_chunks": total,
                "fetched_chunks": offset + len(rows), "page": offset // size + 1, "page_size": size}
        text = "\n\n".join(f"[{r['chunk_index']}] {r['content']}" for r in rows)
        return ToolResult(output=f"{k.title or k.file_name}: {len(rows)} of {total} chunk(s)\n\n{text}",
                          data=data)


def make(deps: ToolDeps) -> ListKnowledgeChunksTool | None:
    return ListKnowledgeChunksTool(deps) if deps.repos is not None else None
