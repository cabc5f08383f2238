"""Fetching a document from a URL without becoming a proxy into the private network.

Every hop (the URL and each redirect) is resolved and refused if any address is loopback, private, link-local,
multicast or reserved — unless ``allow_private_network_fetch`` is set (tests, trusted intranets). The body is
read in pieces and abandoned as soon as it passes the size limit.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from knora.domain.errors import BadRequest, PayloadTooLarge

MAX_REDIRECTS = 5


@dataclass
class Fetched:
    url: str
    data: bytes
    content_type: str


def validate_url(url: str) -> str:
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest("url must be an absolute http(s) URL")
    return url


async def check_public(url: str, allow_private: bool) -> None:
    if allow_private:
        return
    host = urlsplit(url).hostname or ""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise BadRequest(f"cannot resolve host {host!r}") from exc
    for info in infos:
        addr = ipaddress.ip_address(info[4][0])
        if (addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_multicast or addr.is_reserved
                or addr.is_unspecified):
            raise BadRequest(f"refusing to fetch {host!r}: it resolves to a private or local address")


async def fetch(url: str, *, max_bytes: int, timeout: float, allow_private: bool,
                transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    url = validate_url(url)
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, transport=transport,
                                 headers={"User-Agent": "Knora/0.1 (+document ingestion)"}) as client:
        for _ in range(MAX_REDIRECTS + 1):
            await check_public(url, allow_private)
            async with client.stream("GET", url) as resp:
                if resp.is_redirect:
                    location = resp.headers.get("location", "")
                    url = validate_url(urljoin(url, location))
                    continue
                if resp.status_code >= 400:
                    raise BadRequest(f"fetching {url} failed: HTTP {resp.status_code}")
                declared = int(resp.headers.get("content-length") or 0)
                if declared > max_bytes:
                    raise PayloadTooLarge(f"{url} is {declared} bytes; the limit is {max_bytes}")
                buf = bytearray()
                async for piece in resp.aiter_bytes():
                    buf.extend(piece)
                    if len(buf) > max_bytes:
                        raise PayloadTooLarge(f"{url} is larger than the limit of {max_bytes} bytes")
                return Fetched(url=str(resp.url), data=bytes(buf),
                               content_type=resp.headers.get("content-type",
                                                             "").split(";")[0].strip().lower())
    raise BadRequest(f"too many redirects fetching {url}")


CONTENT_TYPES = {
    "text/html": "html", "application/xhtml+xml": "html", "text/plain": "txt", "text/markdown": "md",
    "application/pdf": "pdf", "text/csv": "csv", "application/json": "json",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}


def url_extension(url: str) -> str:
    path = urlsplit(url).path
    last = path.rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last else ""
