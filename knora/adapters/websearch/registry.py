"""Provider name → WebSearch factory (settings ``web_search_provider`` / ``_base_url`` / ``_api_key``)."""

from __future__ import annotations

from collections.abc import Callable

from knora.adapters.websearch.bing import BingSearch
from knora.adapters.websearch.duckduckgo import DuckDuckGoSearch
from knora.adapters.websearch.searxng import SearxngSearch
from knora.adapters.websearch.tavily import TavilySearch
from knora.ports.websearch import WebSearch

Factory = Callable[[str | None, str | None], WebSearch]


def _need(value: str | None, what: str, provider: str) -> str:
    if not value:
        raise ValueError(f"web search provider {provider!r} needs {what}")
    return value


PROVIDERS: dict[str, Factory] = {
    "searxng": lambda base, key: SearxngSearch(_need(base, "a base URL", "searxng")),
    "tavily": lambda base, key: TavilySearch(_need(key, "an API key", "tavily"), base_url=base),
    "bing": lambda base, key: BingSearch(_need(key, "an API key", "bing"), base_url=base),
    "duckduckgo": lambda base, key: DuckDuckGoSearch(base_url=base),
}


def build_web_search(provider: str | None, base_url: str | None = None, api_key: str | None = None
                     ) -> WebSearch | None:
    if not provider:
        return None
    try:
        factory = PROVIDERS[provider.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown web search provider {provider!r}; known: {sorted(PROVIDERS)}") from None
    return factory(base_url, api_key)
