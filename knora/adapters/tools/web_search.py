"""``web_search``: the configured WebSearch provider; rows carry full content, the model sees ≤500 runes."""

from __future__ import annotations

from typing import Any, ClassVar

from knora.adapters.tools._base import BaseTool, need
from knora.ports.tool import ToolContext, ToolDeps, ToolResult
from knora.ports.websearch import resolve_web_search


class WebSearchTool(BaseTool):
    name = "web_search"
    description = ("Search the web. KB first rule: search the knowledge bases before the web; use the web "
                   "for recent events or when the knowledge bases have no answer.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"query": {"type": "string",
                                                                                       "minLength": 1}},
                  "required": ["query"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = str(args["query"]).strip()
        web = need(await resolve_web_search(ctx.tenant_id, self.deps.web_search, self.deps.web_searches),
                   "web search")
        results = await web.search(query, max_results=ctx.web_search_max_results or 5)
        if not results:
            return ToolResult(output=f"No web search results found for query: {query}",
                              data={"query": query, "results": []})
        rows = [{"title": r.title, "url": r.url, "snippet": r.snippet, "content": r.content,
                 "published_at": r.published_at, "source": r.source} for r in results]
        lines = ["=== Web Search Results ===", f"Query: {query}", f"Found {len(rows)} result(s)", ""]
        for i, r in enumerate(rows, 1):
            lines += [f"[{i}] {r['title']}", f"URL: {r['url']}", f"Snippet: {r['snippet']}"]
            if r["content"]:
                cut = r["content"].encode()[:500].decode("utf-8", "ignore")
                lines.append(f"Content: {cut}...")
            lines.append("")
        return ToolResult(output="\n".join(lines), data={"display_type": "web_search_results", "query": query,
                                                         "results": rows})


def make(deps: ToolDeps) -> WebSearchTool | None:
    return WebSearchTool(deps) if deps.web_search is not None or deps.web_searches is not None else None
