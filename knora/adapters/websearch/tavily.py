"""Tavily: ``POST /search`` with a bearer key; returns snippets and (optionally) raw page content."""

from __future__ import annotations

import httpx

from knora.adapters.websearch._http import WebSearchError, client, raise_for
from knora.ports.websearch import WebResult


class TavilySearch:
    name = "tavily"

    def __init__(self, api_key: str, *, base_url: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._base = (base_url or "https://api.tavily.com").rstrip("/")
        self._key = api_key
        self._http = client(transport=transport, headers={"Authorization": f"Bearer {api_key}"})

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        body = {"query": query, "max_results": max_results, "search_depth": "basic", "include_answer": False}
        try:
            resp = await self._http.post(f"{self._base}/search", json=body)
        except httpx.HTTPError as exc:
            raise WebSearchError(f"tavily unreachable: {exc}", transient=True) from exc
        raise_for(resp, "tavily")
        return [WebResult(title=str(r.get("title") or ""), url=str(r["url"]),
                          snippet=str(r.get("content") or ""),
                          content=str(r.get("raw_content") or ""), source="tavily",
                          published_at=r.get("published_date") or None)
                for r in resp.json().get("results", [])[:max_results] if r.get("url")]

    async def close(self) -> None:
        await self._http.aclose()
