"""SSRF guard for tools that fetch URLs: public addresses only (unless settings allow private ones), and every
redirect hop re-checked — a public URL redirecting to 127.0.0.1 or 169.254.169.254 is refused."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import httpx

MAX_REDIRECTS = 5


class FetchRefused(Exception):
    def __init__(self, message: str, code: str = "blocked_address", retryable: bool = False) -> None:
        super().__init__(message)
        self.code, self.retryable = code, retryable


def _blocked(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified)


async def check_url(url: str, *, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchRefused(f"unsupported URL: {url}", code="invalid_url")
    if allow_private:
        return
    host = parts.hostname
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchRefused(f"cannot resolve {host}: {exc}", code="dns_error", retryable=True) from exc
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if _blocked(ip):
            raise FetchRefused(f"refusing to fetch {host}: {ip} is not a public address")


async def safe_get(client: httpx.AsyncClient, url: str, *, allow_private: bool,
                   max_bytes: int = 5_000_000) -> tuple[str, httpx.Response, bytes]:
    """GET with manual redirects, each hop checked. → (final URL, response, body capped at max_bytes)."""
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        await check_url(current, allow_private=allow_private)
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
