"""``get_document_info``: metadata of documents in scope (title, type, size, status, chunk count)."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, in_scope
from knora.ports.tool import ToolContext, ToolDeps, ToolResult


class GetDocumentInfoTool(BaseTool):
    name = "get_document_info"
    description = ("Metadata of documents (handles dN): title, description, source, file type and size, "
                   "chunk count.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "knowledge_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20}},
        "required": ["knowledge_ids"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        docs, missing = [], []
        for kid in args["knowledge_ids"]:
            k = await self.repos.knowledge.get(ctx.tenant_id, str(kid))
            if k is None or not in_scope(ctx, k):
                missing.append(str(kid))
                continue
            count = (await self.repos.chunks.list(ctx.tenant_id, k.id, page=1, page_size=1)).total
            docs.append({"knowledge_id": k.id, "knowledge_base_id": k.knowledge_base_id,
                         "title": k.title or k.file_name, "description": k.description, "type": k.type,
                         "source": k.source, "file_name": k.file_name, "file_type": k.file_type,
                         "file_size": k.file_size, "parse_status": str(k.parse_status), "chunk_count": count,
                         "metadata": k.metadata})
        if not docs:
            return ToolResult.fail(f"document not found: {', '.join(missing)}")
        text = "\n".join(f"- {d['title']} ({d['file_type'] or d['type']}, {d['chunk_count']} chunks): "
                         f"{d['description']}" for d in docs)
        return ToolResult(output=text, data={"display_type": "document_info", "documents": docs,
                                             "not_found": missing})


def make(deps: ToolDeps) -> GetDocumentInfoTool | None:
    return GetDocumentInfoTool(deps) if deps.repos is not None else None
