"""A tenant's web search providers (``/web-search-providers``) and the web search its turns use.

Each stored provider names one of Knora's adapters (``knora.adapters.websearch.registry.PROVIDERS``: searxng,
tavily, bing, duckduckgo); a provider Knora has no adapter for is refused when saved, so the list never holds
one that cannot search. The API key is write-only: it is stored in ``parameters`` and only its presence is
ever answered (``credentials.api_key.configured``), as WeKnora's credential subresource does. A base URL from
the API goes through the tenant outbound policy (``knora.netguard``), like a model's or an MCP service's.

``for_tenant`` is what the quick-answer pipeline and the agent's ``web_search`` tool ask first
(``knora.ports.websearch.resolve_web_search``): the tenant's default provider; without one they search with
the operator's provider from settings (``KNORA_WEB_SEARCH_PROVIDER``), if any. A built client is kept per
(provider id, updated_at), so an edit on any replica is picked up by the next turn.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from knora.adapters.websearch.registry import PROVIDERS, build_web_search, normalise
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.domain.websearch import WebSearchProvider
from knora.netguard import AddressRefused, OutboundPolicy
from knora.ports.websearch import WebSearch, WebSearchProviderRepo

log = logging.getLogger(__name__)

Body = dict[str, Any]

# parameters a client may set besides the key (WeKnora's WebSearchProviderParameters)
_PARAMETERS = ("base_url", "engine_id", "proxy_url", "extra_config")


@dataclass(frozen=True)
class ProviderType:
    """What the settings form needs to render a provider (WeKnora's ``WebSearchProviderTypeInfo``)."""

    id: str
    name: str
    requires_api_key: bool
    requires_base_url: bool
    description: str
    docs_url: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "requires_api_key": self.requires_api_key,
                "supports_optional_api_key": False, "requires_engine_id": False,
                "requires_base_url": self.requires_base_url, "supports_proxy": False,
                "description": self.description, "docs_url": self.docs_url, "config_fields": []}


TYPES: dict[str, ProviderType] = {t.id: t for t in (
    ProviderType("duckduckgo", "DuckDuckGo", False, False, "Free, no API key (HTML results page)",
                 "https://duckduckgo.com"),
    ProviderType("searxng", "SearXNG", False, True, "Self-hosted metasearch; needs its base URL",
                 "https://docs.searxng.org"),
    ProviderType("tavily", "Tavily", True, False, "Search API for LLM applications; needs an API key",
                 "https://docs.tavily.com"),
    ProviderType("bing", "Bing", True, False, "Bing Web Search API; needs an API key",
                 "https://learn.microsoft.com/bing/search-apis/"),
)}
assert set(TYPES) == set(PROVIDERS.names()), "every adapter has a type entry and no type lacks an adapter"


def provider_json(p: WebSearchProvider) -> dict[str, Any]:
    """WeKnora's ``WebSearchProviderEntity``; the API key never leaves the server."""
    out = p.model_dump(mode="json")
    out["parameters"] = {k: v for k, v in p.parameters.items() if k != "api_key"}
    out["credentials"] = {"api_key": {"configured": bool(p.api_key)}}
    return out


def _text(body: Body, key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationFailed(f"{key}: must be a string")
    return value.strip()


def _parameters(sent: object, current: dict[str, Any]) -> dict[str, Any]:
    if sent is None:
        return dict(current)
    if not isinstance(sent, dict):
        raise ValidationFailed("parameters: must be an object")
    out = dict(current)
    for key in _PARAMETERS:
        if key in sent and sent[key] is not None:
            value = sent[key]
            if key == "extra_config":
                if not isinstance(value, dict):
                    raise ValidationFailed("parameters.extra_config: must be an object")
            elif not isinstance(value, str):
                raise ValidationFailed(f"parameters.{key}: must be a string")
            out[key] = value
    api_key = sent.get("api_key")
    if isinstance(api_key, str) and api_key.strip():  # "" or absent keeps the stored key (write-only field)
        out["api_key"] = api_key.strip()
    return out


class WebSearchProviderService:
    def __init__(self, repo: WebSearchProviderRepo, policy: OutboundPolicy) -> None:
        self._repo = repo
        self._policy = policy
        self._clients: dict[tuple[str, datetime], WebSearch] = {}
        self._lock = asyncio.Lock()

    # --- CRUD -----------------------------------------------------------------------------------------------
    async def list(self, tenant_id: int) -> list[WebSearchProvider]:
        return await self._repo.list(tenant_id)

    async def get(self, tenant_id: int, provider_id: str) -> WebSearchProvider:
        found = await self._repo.get(tenant_id, provider_id)
        if found is None:
            raise NotFound("Web search provider not found")
        return found

    async def create(self, tenant_id: int, body: Body) -> WebSearchProvider:
        name = _text(body, "name")
        if not name:
            raise ValidationFailed("name is required")
        provider = WebSearchProvider(tenant_id=tenant_id, name=name, provider=self._kind(body),
                                     description=_text(body, "description") or "",
                                     parameters=_parameters(body.get("parameters"), {}))
        await self._check(provider)
        provider = await self._repo.create(provider)
        if body.get("is_default") is True or not await self._default(tenant_id):
            await self._repo.set_default(tenant_id, provider.id)  # a tenant's first provider is its default
        return await self.get(tenant_id, provider.id)

    async def update(self, tenant_id: int, provider_id: str, body: Body) -> WebSearchProvider:
        current = await self.get(tenant_id, provider_id)
        kind = self._kind(body) if body.get("provider") is not None else current.provider
        parameters = _parameters(body.get("parameters"), current.parameters)
        if kind != current.provider and body.get("parameters") is not None \
                and not (isinstance(body["parameters"], dict) and body["parameters"].get("api_key")):
            parameters.pop("api_key", None)  # another service's key is no key for this one
        updated = current.model_copy(update={
            "name": _text(body, "name") or current.name, "provider": kind, "parameters": parameters,
            "description": _text(body, "description") if body.get("description") is not None
            else current.description})
        await self._check(updated)
        await self._repo.update(updated)
        if body.get("is_default") is True:
            await self._repo.set_default(tenant_id, provider_id)
        elif body.get("is_default") is False and current.is_default:
            await self._repo.set_default(tenant_id, None)
        return await self.get(tenant_id, provider_id)

    async def delete(self, tenant_id: int, provider_id: str) -> None:
        if not await self._repo.delete(tenant_id, provider_id):
            raise NotFound("Web search provider not found")
        await self._evict(provider_id)

    async def set_api_key(self, tenant_id: int, provider_id: str, api_key: str | None) -> WebSearchProvider:
        """``PUT …/credentials`` (a key) and ``DELETE …/credentials/api_key`` (None)."""
        current = await self.get(tenant_id, provider_id)
        parameters = dict(current.parameters)
        if api_key:
            parameters["api_key"] = api_key
        else:
            parameters.pop("api_key", None)
        updated = current.model_copy(update={"parameters": parameters})
        if api_key:
            await self._check(updated)
        await self._repo.update(updated)
        return await self.get(tenant_id, provider_id)

    # --- use ------------------------------------------------------------------------------------------------
    async def test(self, provider: WebSearchProvider) -> int:
        """Runs one search through the provider; the number of results, or BadRequest with the reason."""
        await self._check(provider)
        web = self._build(provider)
        try:
            results = await web.search("Knora web search test", max_results=3)
        except Exception as exc:  # noqa: BLE001 - any provider failure is the test's answer
            raise BadRequest(f"web search test failed: {exc}") from exc
        finally:
            await _close(web)
        return len(results)

    def draft(self, tenant_id: int, body: Body) -> WebSearchProvider:
        """An unsaved provider from a ``POST /web-search-providers/test`` body."""
        return WebSearchProvider(tenant_id=tenant_id, name="test", provider=self._kind(body),
                                 parameters=_parameters(body.get("parameters"), {}))

    async def for_tenant(self, tenant_id: int) -> WebSearch | None:
        default = await self._default(tenant_id)
        if default is None:
            return None
        key = (default.id, default.updated_at)
        async with self._lock:
            web = self._clients.get(key)
            if web is None:
                for old in [k for k in self._clients if k[0] == default.id]:
                    await _close(self._clients.pop(old))
                try:
                    web = self._clients[key] = self._build(default)
                except ValueError as exc:  # a stored row that no longer builds: no web search, said why
                    log.warning("web search provider %s unusable: %s", default.id, exc)
                    return None
        return web

    async def close(self) -> None:
        async with self._lock:
            for web in self._clients.values():
                await _close(web)
            self._clients.clear()

    # --- helpers --------------------------------------------------------------------------------------------
    async def _default(self, tenant_id: int) -> WebSearchProvider | None:
        return next((p for p in await self._repo.list(tenant_id) if p.is_default), None)

    @staticmethod
    def _kind(body: Body) -> str:
        kind = normalise(_text(body, "provider") or "")
        if kind not in TYPES:
            raise ValidationFailed(f"provider must be one of {', '.join(TYPES)} (the web search engines "
                                   "Knora has adapters for)")
        return kind

    async def _check(self, p: WebSearchProvider) -> None:
        kind = TYPES[p.provider]
        if kind.requires_api_key and not p.api_key:
            raise ValidationFailed(f"{kind.name} needs an API key (parameters.api_key)")
        if kind.requires_base_url and not p.base_url:
            raise ValidationFailed(f"{kind.name} needs its base URL (parameters.base_url)")
        if p.base_url:
            try:
                await self._policy.check_url(p.base_url)
            except AddressRefused as exc:
                raise BadRequest(f"parameters.base_url: {exc}") from exc
            except ValueError as exc:
                raise ValidationFailed(f"parameters.base_url: {exc}") from exc

    def _build(self, p: WebSearchProvider) -> WebSearch:
        web = build_web_search(p.provider, p.base_url or None, p.api_key or None,
                               transport=self._policy.transport())
        if web is None:  # pragma: no cover - provider is never empty here
            raise ValueError("no provider")
        return web

    async def _evict(self, provider_id: str) -> None:
        async with self._lock:
            for key in [k for k in self._clients if k[0] == provider_id]:
                await _close(self._clients.pop(key))


async def _close(web: WebSearch) -> None:
    close = getattr(web, "close", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - closing an idle client must not fail a request
            log.debug("closing a web search client failed", exc_info=True)
