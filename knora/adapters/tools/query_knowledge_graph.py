"""``query_knowledge_graph``: entities and relations whose names match, from KBs that have a graph."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, need
from knora.ports.tool import ToolContext, ToolDeps, ToolResult


class QueryKnowledgeGraphTool(BaseTool):
    name = "query_knowledge_graph"
    description = ("Look up entities and their relations in the knowledge graph of knowledge bases that have "
                   "one (handles bN). Query with entity names or a short phrase.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "knowledge_base_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 10},
        "query": {"type": "string", "minLength": 1}}, "required": ["knowledge_base_ids", "query"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        kb_ids = ([k for k in args["knowledge_base_ids"] if k in ctx.knowledge_base_ids]
                  or list(ctx.knowledge_base_ids))
        graph = need(self.deps.graph_store, "the knowledge graph")
        with_graph = await graph.has_graph(ctx.tenant_id, kb_ids)
        if not with_graph:
            return ToolResult(output="None of these knowledge bases has a knowledge graph configured; use "
                                     "knowledge_search instead.", data={"graph_configured": False})
        terms = [t for t in re.split(r"[\s,;，；、]+", str(args["query"])) if t] or [str(args["query"])]
        found = await graph.search_nodes(ctx.tenant_id, with_graph, terms,
                                                         knowledge_ids=ctx.knowledge_ids)
        if not found.nodes:
            return ToolResult(output=f"No graph entities match {args['query']!r}.",
                              data={"graph_configured": True, "nodes": [], "relations": []})
        lines = ["Entities:"] + [f"- {n.name} ({n.type}): {n.description}" for n in found.nodes]
        if found.relations:
            lines += ["Relations:"] + [f"- {r.source} -[{r.type}]-> {r.target}: {r.description}"
                                       for r in found.relations]
        return ToolResult(output="\n".join(lines), data={"graph_configured": True, **found.as_dict()})


def make(deps: ToolDeps) -> QueryKnowledgeGraphTool | None:
    return QueryKnowledgeGraphTool(deps) if deps.graph_store is not None else None
