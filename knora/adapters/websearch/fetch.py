"""The pipeline's page fetcher (spec §2.12): 15 s, 100 KiB, ≤ 10 redirects, no private addresses, HTML → text.

Every hop is validated when it is requested and connected to the address that was checked (a public URL
redirecting to 127.0.0.1 is refused, and so is a name that resolves to loopback the second time): the
policy of :mod:`knora.netguard`, unless ``allow_private`` is set (settings ``allow_private_network_fetch``;
tests use it for local servers).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import httpx
from bs4 import BeautifulSoup

from knora.adapters.websearch._http import USER_AGENT
from knora.netguard import AddressRefused, Resolver, check_scheme, pinned_client

MAX_BODY = 100 * 1024
MAX_REDIRECTS = 10
TIMEOUT = 15.0
_DROP = ("script", "style", "nav", "footer", "header", "iframe", "noscript", "svg", "img")
_JS_HINT = re.compile(r"(?i)enable javascript|loading\.\.\.")


FetchRefused = AddressRefused  # a blocked address, an unsupported URL, or too many redirects


def html_to_text(html: str) -> str:
    soup = BeautifulSoup(html, "lxml")
    raw_len = len(soup.get_text(strip=True))
    has_app_root = soup.find(id=("app", "root")) is not None and soup.find("script") is not None
    for tag in soup(list(_DROP)):
        tag.decompose()
    body = soup.body or soup
    lines = [ln.strip() for ln in body.get_text("\n").splitlines()]
    text = "\n".join(ln for ln in lines if ln)
    if not text or _JS_HINT.search(text) and len(text) < 400 or (raw_len < 200 and has_app_root):
        return ""  # a JavaScript-rendered shell: nothing a reader could use
    return text


class PageFetcher:
    def __init__(self, *, allow_private: bool = False, timeout: float = TIMEOUT,
                 transport: httpx.AsyncBaseTransport | None = None, resolver: Resolver | None = None) -> None:
        """``transport`` is what the pinned request is sent through (tests); the guard wraps it either way."""
        self._http = pinned_client(allow_private=allow_private, timeout=timeout, resolver=resolver,
                                   inner=transport,
                                   headers={"User-Agent": USER_AGENT, "Accept": "text/html,*/*;q=0.5"})

    async def close(self) -> None:
        await self._http.aclose()

    async def __call__(self, url: str) -> str:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            check_scheme(current)  # the address is checked, and pinned, by the client's transport
            async with self._http.stream("GET", current) as resp:
                if resp.is_redirect:
                    location = resp.headers.get("location")
                    if not location:
                        return ""
                    current = urljoin(current, location)
                    continue
                if resp.status_code >= 400:
                    return ""
                body = b""
                async for part in resp.aiter_bytes():
                    body += part
                    if len(body) >= MAX_BODY:
                        body = body[:MAX_BODY]
                        break
                ctype = resp.headers.get("content-type", "")
                text = body.decode(resp.encoding or "utf-8", errors="replace")
                return (html_to_text(text) if "html" in ctype or text.lstrip().startswith("<")
                        else text.strip())
        raise FetchRefused(f"too many redirects for {url}", code="too_many_redirects")
