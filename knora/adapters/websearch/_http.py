"""Shared httpx client construction so every provider takes an injectable transport (tests, proxies).

Without one, a provider connects through the operator outbound policy's pinned transport: its base URL
comes from settings, so a local SearXNG on loopback or a private address is fine, but neither the configured
URL nor a redirect can reach link-local or cloud metadata addresses."""

from __future__ import annotations

import httpx

from knora.netguard import OPERATOR
from knora.ports.chat import ModelError

USER_AGENT = "Mozilla/5.0 (compatible; Knora/0.1; +https://github.com/)"


def client(timeout: float = 15.0, transport: httpx.AsyncBaseTransport | None = None,
           headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout, transport=transport or OPERATOR.transport(),
                             follow_redirects=True,
                             headers={"User-Agent": USER_AGENT, **(headers or {})})


class WebSearchError(ModelError):
    """A provider call failed; ``transient`` as for models (timeouts, 429, 5xx)."""


def raise_for(resp: httpx.Response, provider: str) -> None:
    if resp.status_code >= 400:
        status = resp.status_code
        raise WebSearchError(f"{provider} error {status}", transient=status == 429 or status >= 500,
                             status=status)
