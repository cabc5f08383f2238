from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from knora.domain.websearch import WebSearchProvider


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str = ""
    content: str = ""
    source: str = ""
    published_at: str | None = None


@runtime_checkable
class WebSearch(Protocol):
    @property
    def name(self) -> str: ...

    async def search(self, query: str, max_results: int = 5) -> list[WebResult]: ...


@runtime_checkable
class WebSearchProviderRepo(Protocol):
    """A tenant's stored provider configurations (``knora.domain.websearch.WebSearchProvider``)."""

    async def create(self, provider: WebSearchProvider) -> WebSearchProvider: ...

    async def get(self, tenant_id: int, provider_id: str) -> WebSearchProvider | None: ...

    async def list(self, tenant_id: int) -> list[WebSearchProvider]:
        """Oldest first."""
        ...

    async def update(self, provider: WebSearchProvider) -> WebSearchProvider: ...

    async def delete(self, tenant_id: int, provider_id: str) -> bool: ...

    async def set_default(self, tenant_id: int, provider_id: str | None) -> None:
        """Makes ``provider_id`` the tenant's only default (None: no default), in one transaction."""
        ...


@runtime_checkable
class TenantWebSearch(Protocol):
    """A tenant's own web search: its default stored provider (``/web-search-providers``)."""

    async def for_tenant(self, tenant_id: int) -> WebSearch | None:
        """None when the tenant has no default provider."""
        ...


async def resolve_web_search(tenant_id: int, fixed: WebSearch | None,
                             per_tenant: TenantWebSearch | None) -> WebSearch | None:
    """The web search for one tenant's turn: the tenant's own default provider, else ``fixed`` (the
    operator's, from settings)."""
    own = await per_tenant.for_tenant(tenant_id) if per_tenant is not None else None
    return own or fixed
