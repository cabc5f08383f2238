"""Provider name → WebSearch factory (settings ``web_search_provider`` / ``_base_url`` / ``_api_key``).

Each factory imports its provider when called: a server without web search configured imports none of them,
and settings can check ``web_search_provider`` against ``PROVIDERS.names()`` without importing any.
"""

from __future__ import annotations

from typing import Protocol

import httpx

from knora.domain.registry import Registry
from knora.ports.websearch import WebSearch


class Factory(Protocol):
    """(base URL, API key) → provider; ``transport`` carries a tenant's outbound policy for a URL stored
    through the API (None: the operator's, for settings)."""

    def __call__(self, base_url: str | None, api_key: str | None, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> WebSearch: ...


def _need(value: str | None, what: str, provider: str) -> str:
    if not value:
        raise ValueError(f"web search provider {provider!r} needs {what}")
    return value


def _searxng(base_url: str | None, api_key: str | None, *,
             transport: httpx.AsyncBaseTransport | None = None) -> WebSearch:
    from knora.adapters.websearch.searxng import SearxngSearch

    return SearxngSearch(_need(base_url, "a base URL", "searxng"), transport=transport)


def _tavily(base_url: str | None, api_key: str | None, *,
            transport: httpx.AsyncBaseTransport | None = None) -> WebSearch:
    from knora.adapters.websearch.tavily import TavilySearch

    return TavilySearch(_need(api_key, "an API key", "tavily"), base_url=base_url, transport=transport)


def _bing(base_url: str | None, api_key: str | None, *,
          transport: httpx.AsyncBaseTransport | None = None) -> WebSearch:
    from knora.adapters.websearch.bing import BingSearch

    return BingSearch(_need(api_key, "an API key", "bing"), base_url=base_url, transport=transport)


def _duckduckgo(base_url: str | None, api_key: str | None, *,
                transport: httpx.AsyncBaseTransport | None = None) -> WebSearch:
    from knora.adapters.websearch.duckduckgo import DuckDuckGoSearch

    return DuckDuckGoSearch(base_url=base_url, transport=transport)


PROVIDERS: Registry[Factory] = Registry("web search provider", {
    "searxng": _searxng, "tavily": _tavily, "bing": _bing, "duckduckgo": _duckduckgo,
})


def normalise(provider: str) -> str:
    """Provider names are matched trimmed and case-insensitively (``" Tavily"`` is ``tavily``)."""
    return provider.strip().lower()


def build_web_search(provider: str | None, base_url: str | None = None, api_key: str | None = None, *,
                     transport: httpx.AsyncBaseTransport | None = None) -> WebSearch | None:
    """The configured provider, or None when web search is off (no provider); ValueError for an unknown
    one."""
    if not provider:
        return None
    return PROVIDERS.get(normalise(provider))(base_url, api_key, transport=transport)
