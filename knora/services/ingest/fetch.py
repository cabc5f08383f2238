"""Fetching a document from a URL without becoming a proxy into the private network.

Every hop (the URL and each redirect) is resolved once, refused unless every address is public, and connected
to at the address that was checked (:mod:`knora.netguard`) — unless ``allow_private_network_fetch`` is set
(tests, trusted intranets). The body is
read in pieces and abandoned as soon as it passes the size limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from knora import netguard
from knora.domain.errors import BadRequest, PayloadTooLarge
from knora.netguard import AddressRefused, Resolver

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


async def check_public(url: str, allow_private: bool, resolver: Resolver | None = None) -> None:
    """An early 400 when the URL is added; the fetch itself is guarded again at connect time."""
    try:
        await netguard.check_url(url, allow_private=allow_private, resolver=resolver)
    except AddressRefused as exc:
        raise BadRequest(str(exc)) from exc


async def fetch(url: str, *, max_bytes: int, timeout: float, allow_private: bool,
                transport: httpx.AsyncBaseTransport | None = None,
                resolver: Resolver | None = None) -> Fetched:
    """``transport`` is what the pinned request is sent through (tests); the guard wraps it either way."""
    url = validate_url(url)
    async with netguard.pinned_client(allow_private=allow_private, timeout=timeout, resolver=resolver,
                                      inner=transport,
                                      headers={"User-Agent": "Knora/0.1 (+document ingestion)"}) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with client.stream("GET", url) as resp:
                    if resp.is_redirect:
                        location = resp.headers.get("location", "")
                        url = validate_url(urljoin(url, location))
                        continue
                    return await _read(url, resp, max_bytes)
            except AddressRefused as exc:
                raise BadRequest(str(exc)) from exc
    raise BadRequest(f"too many redirects fetching {url}")


async def _read(url: str, resp: httpx.Response, max_bytes: int) -> Fetched:
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
    return Fetched(url=url, data=bytes(buf),
                   content_type=resp.headers.get("content-type", "").split(";")[0].strip().lower())


CONTENT_TYPES = {
    "text/html": "html", "application/xhtml+xml": "html", "text/plain": "txt", "text/markdown": "md",
    "application/pdf": "pdf", "text/csv": "csv", "application/json": "json",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "message/rfc822": "eml", "application/vnd.ms-outlook": "msg",
    "application/epub+zip": "epub", "application/rtf": "rtf", "text/rtf": "rtf",
    "application/vnd.ms-excel": "xls", "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
}


def url_extension(url: str) -> str:
    path = urlsplit(url).path
    last = path.rsplit("/", 1)[-1]
    return last.rsplit(".", 1)[-1].lower() if "." in last else ""
