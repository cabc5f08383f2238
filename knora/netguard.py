"""The one SSRF guard for URLs a user or a model names (URL import, ``web_fetch``, the pipeline's page fetch).

Two rules, each learnt from an attack:

* **Connect to the address that was checked.** Checking a host name and then letting the HTTP client resolve
  it again lets DNS rebinding through: the first answer is public, the second is 127.0.0.1 (the simulation
  reached loopback 2 times of 2). :class:`PinnedTransport` resolves once per request — so once per redirect
  hop, since callers follow redirects themselves — refuses the hop unless every address is public, and sends
  the request to that IP, with the ``Host`` header and TLS SNI/certificate check still for the name.
* **Public means public.** ``ipaddress``'s ``is_private`` misses carrier-grade NAT (100.64.0.0/10, where
  100.100.100.200 is a cloud metadata address), benchmarking, multicast and the IETF block; Python 3.11's
  ``is_global`` still counts 192.0.0.0/24 and multicast as global. :func:`is_public` requires ``is_global``
  and refuses those ranges explicitly, and judges an IPv6 address that embeds an IPv4 one (IPv4-mapped,
  NAT64 ``64:ff9b::/96``, 6to4, Teredo) by the IPv4 address inside.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

_NOT_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10",
    "fec0::/10", "ff00::/8"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefused(Exception):
    """The URL may not be fetched: ``code`` is ``blocked_address``, ``dns_error`` or ``invalid_url``."""

    def __init__(self, message: str, code: str = "blocked_address", retryable: bool = False) -> None:
        super().__init__(message)
        self.code, self.retryable = code, retryable


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo client), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def is_public(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            return is_public(inner)
    if any(ip.version == net.version and ip in net for net in _NOT_PUBLIC):
        return False
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_private or ip.is_unspecified)


async def system_resolver(host: str, port: int) -> Sequence[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _parse(address: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return None


async def resolve_public(host: str, port: int, resolver: Resolver | None = None) -> IPAddress:
    """The address to connect to for ``host``: every address it resolves to must be public (a name with one
    private answer among public ones is refused, since the client could be steered to it)."""
    literal = _parse(host.strip("[]"))
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        try:
            answers = await (resolver or system_resolver)(host, port)
        except (OSError, UnicodeError) as exc:
            raise AddressRefused(f"cannot resolve {host}: {exc}", code="dns_error", retryable=True) from exc
        parsed = [_parse(a) for a in answers]
        addresses = [a for a in parsed if a is not None]
        if not addresses or len(addresses) != len(parsed):
            raise AddressRefused(f"cannot resolve {host}", code="dns_error", retryable=True)
    for address in addresses:
        if not is_public(address):
            raise AddressRefused(f"refusing to fetch {host}: {address} is not a public address")
    return addresses[0]


def _port(url: httpx.URL) -> int:
    return url.port or (443 if url.scheme == "https" else 80)


def check_scheme(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise AddressRefused(f"unsupported URL: {url}", code="invalid_url") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise AddressRefused(f"unsupported URL: {url}", code="invalid_url")
    return parsed


async def check_url(url: str, *, allow_private: bool, resolver: Resolver | None = None) -> None:
    """An early, friendly refusal (before a job is queued); the fetch itself is guarded by the transport."""
    parsed = check_scheme(url)
    if not allow_private:
        await resolve_public(parsed.raw_host.decode("ascii"), _port(parsed), resolver)


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that connects only to the public address it checked for each request.

    The request goes to ``inner`` with the IP in the URL, the original ``Host`` header, and the name as TLS
    SNI (httpcore's ``sni_hostname`` extension, which is also the name the certificate is verified against).
    ``inner`` keeps no idle connections: a pooled connection is keyed by IP, and one verified for another
    name must not be reused for this one. With ``allow_private`` (settings ``allow_private_network_fetch``)
    requests pass through unchanged.
    """

    def __init__(self, *, allow_private: bool = False, resolver: Resolver | None = None,
                 inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._allow_private = allow_private
        self._resolver = resolver
        self._inner = inner or httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            raise AddressRefused(f"unsupported URL: {url}", code="invalid_url")
        if self._allow_private:
            return await self._inner.handle_async_request(request)
        host = url.raw_host.decode("ascii")  # IDNA-encoded: what DNS and SNI take
        ip = await resolve_public(host, _port(url), self._resolver)
        pinned = httpx.Request(request.method, url.copy_with(host=str(ip)), headers=request.headers,
                               stream=request.stream, extensions={**request.extensions, "sni_hostname": host})
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client(*, allow_private: bool, timeout: float, headers: dict[str, str] | None = None,
                  resolver: Resolver | None = None,
                  inner: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request goes through :class:`PinnedTransport` (no redirects
    followed by the client: callers follow them hop by hop, and each hop is a new checked request)."""
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, headers=headers,
                             transport=PinnedTransport(allow_private=allow_private, resolver=resolver,
                                                       inner=inner))
