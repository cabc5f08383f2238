"""Bing Web Search v7: ``GET /v7.0/search`` with ``Ocp-Apim-Subscription-Key``."""

from __future__ import annotations

import httpx

from knora.adapters.websearch._http import WebSearchError, client, raise_for
from knora.ports.websearch import WebResult


class BingSearch:
    name = "bing"

    def __init__(self, api_key: str, *, base_url: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._base = (base_url or "https://api.bing.microsoft.com").rstrip("/")
        self._http = client(transport=transport, headers={"Ocp-Apim-Subscription-Key": api_key})

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        try:
            resp = await self._http.get(f"{self._base}/v7.0/search",
                                        params={"q": query, "count": max_results, "textFormat": "Raw"})
        except httpx.HTTPError as exc:
            raise WebSearchError(f"bing unreachable: {exc}", transient=True) from exc
        raise_for(resp, "bing")
        pages = (resp.json().get("webPages") or {}).get("value", [])
        return [WebResult(title=str(p.get("name") or ""), url=str(p["url"]),
                          snippet=str(p.get("snippet") or ""),
                          source="bing",
                          published_at=p.get("datePublished") or p.get("dateLastCrawled") or None)
                for p in pages[:max_results] if p.get("url")]

    async def close(self) -> None:
        await self._http.aclose()
