"""DuckDuckGo's HTML endpoint (no key). Result links are redirect URLs carrying the target in ``uddg``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
from bs4 import BeautifulSoup

from knora.adapters.websearch._http import WebSearchError, client, raise_for
from knora.ports.websearch import WebResult


def _target(href: str) -> str:
    parts = urlsplit(href if "://" in href else f"https:{href}" if href.startswith("//") else href)
    if parts.path.startswith("/l/"):
        return parse_qs(parts.query).get("uddg", [""])[0]
    return href


def parse_results(html: str, max_results: int) -> list[WebResult]:
    soup = BeautifulSoup(html, "lxml")
    out: list[WebResult] = []
    for node in soup.select(".result"):
        link = node.select_one("a.result__a")
        if link is None or not link.get("href"):
            continue
        url = _target(str(link["href"]))
        if not url.startswith(("http://", "https://")) or "duckduckgo.com/y.js" in url:
            continue  # ads
        snippet = node.select_one(".result__snippet")
        out.append(WebResult(title=link.get_text(" ", strip=True), url=url, source="duckduckgo",
                             snippet=snippet.get_text(" ", strip=True) if snippet else ""))
        if len(out) >= max_results:
            break
    return out


class DuckDuckGoSearch:
    name = "duckduckgo"

    def __init__(self, *, base_url: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._base = (base_url or "https://html.duckduckgo.com").rstrip("/")
        self._http = client(transport=transport)

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        try:
            resp = await self._http.post(f"{self._base}/html/", data={"q": query})
        except httpx.HTTPError as exc:
            raise WebSearchError(f"duckduckgo unreachable: {exc}", transient=True) from exc
        raise_for(resp, "duckduckgo")
        return parse_results(resp.text, max_results)

    async def close(self) -> None:
        await self._http.aclose()
