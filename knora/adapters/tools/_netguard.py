"""SSRF guard for tools that fetch URLs (``web_fetch``): the shared :mod:`knora.netguard` policy — public
addresses only unless settings allow private ones, the connection pinned to the address that was checked, and
every redirect hop re-checked (a public URL redirecting to 127.0.0.1 or 169.254.169.254 is refused)."""

from __future__ import annotations

from urllib.parse import urljoin

import httpx

from knora.netguard import AddressRefused, Resolver, check_scheme, pinned_client
from knora.netguard import check_url as _check_url

MAX_REDIRECTS = 5

FetchRefused = AddressRefused  # the name the tool and its tests use; carries ``code`` and ``retryable``


def guarded_client(*, allow_private: bool, timeout: float, headers: dict[str, str] | None = None,
                   resolver: Resolver | None = None) -> httpx.AsyncClient:
    """The client :func:`safe_get` expects: every connection goes to the address that was checked."""
    return pinned_client(allow_private=allow_private, timeout=timeout, headers=headers, resolver=resolver)


async def check_url(url: str, *, allow_private: bool) -> None:
    await _check_url(url, allow_private=allow_private)


async def safe_get(client: httpx.AsyncClient, url: str, *, allow_private: bool,
                   max_bytes: int = 5_000_000) -> tuple[str, httpx.Response, bytes]:
    """GET with manual redirects, each hop checked. → (final URL, response, body capped at max_bytes).

    ``client`` comes from :func:`guarded_client`: the scheme is checked here, the address by its transport at
    connect time (a check here and a second resolution by the client would let DNS rebinding through)."""
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        check_scheme(current)
        async with client.stream("GET", current, follow_redirects=False) as resp:
            if resp.is_redirect and "location" in resp.headers:
                current = urljoin(current, resp.headers["location"])
                continue
            body = bytearray()
            async for part in resp.aiter_bytes():
                body.extend(part)
                if len(body) >= max_bytes:
                    break
            return current, resp, bytes(body[:max_bytes])
    raise FetchRefused(f"too many redirects from {url}", code="too_many_redirects")
