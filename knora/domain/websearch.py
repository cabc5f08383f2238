"""Web search provider configurations (``/web-search-providers``): a tenant's search engines, one of them
its default."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from knora.domain.common import new_id, utcnow


class WebSearchProvider(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    name: str
    provider: str  # a name of knora.adapters.websearch.registry.PROVIDERS
    description: str = ""
    # base_url, engine_id, proxy_url, extra_config, and api_key — the key is write-only: never serialised back
    parameters: dict[str, Any] = Field(default_factory=dict)
    is_default: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def api_key(self) -> str:
        key = self.parameters.get("api_key")
        return key if isinstance(key, str) else ""

    @property
    def base_url(self) -> str:
        url = self.parameters.get("base_url")
        return url if isinstance(url, str) else ""
