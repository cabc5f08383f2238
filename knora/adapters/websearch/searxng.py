"""SearXNG (self-hosted metasearch): ``GET {base}/search?format=json`` — no key, good for private setups."""

from __future__ import annotations

import httpx

from knora.adapters.websearch._http import WebSearchError, client, raise_for
from knora.ports.websearch import WebResult


class SearxngSearch:
    name = "searxng"

    def __init__(self, base_url: str, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._base = base_url.rstrip("/")
        self._http = client(transport=transport)

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        try:
            resp = await self._http.get(f"{self._base}/search", params={"q": query, "format": "json"})
        except httpx.HTTPError as exc:
            raise WebSearchError(f"searxng unreachable: {exc}", transient=True) from exc
        raise_for(resp, "searxng")
        out = []
        for r in resp.json().get("results", [])[:max_results]:
            out.append(WebResult(title=str(r.get("title") or ""), url=str(r.get("url") or ""),
                                 snippet=str(r.get("content") or ""),
                                 source=str(r.get("engine") or "searxng"),
                                 published_at=r.get("publishedDate") or None))
        return [r for r in out if r.url]

    async def close(self) -> None:
        await self._http.aclose()
