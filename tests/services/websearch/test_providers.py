"""A tenant's web search providers: validation against Knora's adapters, the write-only key, the tenant
outbound policy on base URLs, and which provider a turn searches with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from knora.adapters.db.repos.web_search_providers import SqlWebSearchProviderRepo
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.netguard import tenant_policy
from knora.ports.websearch import WebResult, resolve_web_search
from knora.root import Services
from knora.services.websearch.providers import WebSearchProviderService, provider_json
from knora.settings import Settings
from tests.conftest import started

pytestmark = pytest.mark.integration


class Operator:
    name = "operator"

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]:
        return [WebResult(title="op", url="https://operator.example")]


@pytest.fixture
async def c(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings()) as services:
        yield services


def _svc(c: Services, *, loopback: bool = True) -> WebSearchProviderService:
    policy = tenant_policy(["127.0.0.1"] if loopback else [])
    return WebSearchProviderService(SqlWebSearchProviderRepo(c.sessions), policy)


async def _turn_web(svc: WebSearchProviderService, tenant_id: int) -> object:
    """What a turn of ``tenant_id`` searches with when the operator configured ``Operator``."""
    return await resolve_web_search(tenant_id, Operator(), svc)


class TestProviders:
    async def test_the_key_is_write_only(self, c: Services) -> None:
        svc = _svc(c)
        p = await svc.create(1, {"name": "T", "provider": " Tavily",
                                 "parameters": {"api_key": "tvly-secret"}})
        out = provider_json(p)
        assert out["provider"] == "tavily"
        assert "api_key" not in out["parameters"]
        assert out["credentials"] == {"api_key": {"configured": True}}
        assert "tvly-secret" not in str(out)
        kept = await svc.update(1, p.id, {"name": "T2", "parameters": {"api_key": ""}})  # "" keeps the key
        assert kept.api_key == "tvly-secret"
        assert kept.name == "T2"
        cleared = await svc.set_api_key(1, p.id, None)
        assert provider_json(cleared)["credentials"]["api_key"]["configured"] is False

    async def test_only_providers_knora_can_search_with(self, c: Services) -> None:
        svc = _svc(c)
        with pytest.raises(ValidationFailed, match="one of"):
            await svc.create(1, {"name": "G", "provider": "google"})
        with pytest.raises(ValidationFailed, match="API key"):
            await svc.create(1, {"name": "B", "provider": "bing"})
        with pytest.raises(ValidationFailed, match="base URL"):
            await svc.create(1, {"name": "S", "provider": "searxng"})
        with pytest.raises(ValidationFailed, match="name"):
            await svc.create(1, {"provider": "duckduckgo"})

    async def test_a_base_url_goes_through_the_tenant_policy(self, c: Services) -> None:
        with pytest.raises(BadRequest, match="not a public address"):
            await _svc(c, loopback=False).create(1, {"name": "S", "provider": "searxng",
                                                     "parameters": {"base_url": "http://127.0.0.1:9"}})
        with pytest.raises(BadRequest, match="always refused"):
            await _svc(c).create(1, {"name": "S", "provider": "searxng",
                                     "parameters": {"base_url": "http://169.254.169.254/"}})

    async def test_the_default_is_what_turns_use(self, c: Services) -> None:
        svc = _svc(c)
        assert await svc.for_tenant(1) is None
        assert isinstance(await _turn_web(svc, 1), Operator)  # no provider of its own: the operator's
        first = await svc.create(1, {"name": "D", "provider": "duckduckgo"})
        assert first.is_default  # a tenant's first provider is its default
        web = await svc.for_tenant(1)
        assert web is not None
        assert web.name == "duckduckgo"
        assert await svc.for_tenant(1) is web  # kept while the row is unchanged
        second = await svc.create(1, {"name": "S", "provider": "searxng", "is_default": True,
                                      "parameters": {"base_url": "http://127.0.0.1:9/"}})
        assert [p.is_default for p in await svc.list(1)] == [False, True]
        switched = await svc.for_tenant(1)
        assert switched is not None
        assert switched.name == "searxng"
        assert isinstance(await _turn_web(svc, 2), Operator)  # another tenant is not affected
        await svc.delete(1, second.id)
        assert isinstance(await _turn_web(svc, 1), Operator)  # no default left
        with pytest.raises(NotFound):
            await svc.delete(1, second.id)
        with pytest.raises(NotFound):
            await svc.get(2, first.id)
        await svc.close()
