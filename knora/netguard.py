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

The same guard covers every outbound call, not only fetched pages: an :class:`OutboundPolicy` says which
non-public addresses a kind of URL may reach. Model, embedder, reranker and MCP URLs that tenants store
through the API get :func:`tenant_policy` (public addresses, plus what the operator allow-lists); URLs from
the operator's own settings get :data:`OPERATOR` (loopback and private ranges too: a local Ollama or vLLM is
the embedded default). Link-local addresses and cloud metadata services are refused under every policy — no
deployment needs 169.254.169.254, and it is the first thing an attacker asks for.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import httpx
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

_NOT_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10",
    "fec0::/10", "ff00::/8"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Refused whatever the policy says: link-local (169.254.169.254 is AWS/GCP/Azure metadata) and the metadata
# addresses outside it (Alibaba's 100.100.100.200, AWS's IPv6 fd00:ec2::254).
_ALWAYS_REFUSED = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16", "fe80::/10", "100.100.100.200/32", "fd00:ec2::254/128"))


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


def always_refused(ip: IPAddress) -> bool:
    """Link-local or a cloud metadata address (also inside an IPv6 address that embeds one)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            return always_refused(inner)
    return any(ip.version == net.version and ip in net for net in _ALWAYS_REFUSED)


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
    return (await PUBLIC_ONLY.resolve(host, port, resolver))[0]


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
    await (PRIVATE_ALLOWED if allow_private else PUBLIC_ONLY).check_url(url, resolver)


@dataclass(frozen=True)
class AllowRule:
    """One operator allow-list entry: a CIDR or IP (``10.0.0.0/8``, ``127.0.0.1``), optionally with a port
    (``127.0.0.1:11434``, ``[::1]:8000``), or a host name (``ollama.internal``, ``ollama.internal:11434``).
    A name rule trusts the name whatever it resolves to (except link-local and metadata, refused always)."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    host: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> AllowRule:
        raw = text.strip().lower()
        if not raw:
            raise ValueError("an empty allow-list entry")
        try:
            if "/" in raw:
                return cls(network=ipaddress.ip_network(raw, strict=False))
            if raw.startswith("["):
                inside, _, rest = raw[1:].partition("]")
                port = int(rest[1:]) if rest.startswith(":") else None
                return cls(network=ipaddress.ip_network(inside), port=port)
            literal = _parse(raw)
            if literal is not None:
                return cls(network=ipaddress.ip_network(literal))
            name, sep, port_text = raw.partition(":")
            literal = _parse(name)
            if literal is not None:
                return cls(network=ipaddress.ip_network(literal), port=int(port_text))
            return cls(host=name.rstrip("."), port=int(port_text) if sep else None)
        except ValueError as exc:
            raise ValueError(f"not a host, host:port or CIDR: {text!r}") from exc

    def matches(self, host: str, port: int, ip: IPAddress) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return ip.version == self.network.version and ip in self.network
        return host.lower().rstrip(".") == self.host


@dataclass(frozen=True)
class OutboundPolicy:
    """Which addresses one kind of outbound URL may reach.

    Public addresses always; link-local and cloud metadata never; everything else (loopback, private,
    carrier-grade NAT …) only with ``allow_private`` or when an ``allowed`` rule matches. ``name`` is for
    messages and cache keys (a client built under one policy must not serve a URL of another)."""

    name: str = "public"
    allow_private: bool = False
    allowed: tuple[AllowRule, ...] = ()
    hint: str = ""  # how an operator allows more, appended to a refusal

    def permits(self, host: str, port: int, ip: IPAddress) -> bool:
        if always_refused(ip):
            return False
        if self.allow_private or is_public(ip):
            return True
        return any(rule.matches(host, port, ip) for rule in self.allowed)

    def refusal(self, host: str, ip: IPAddress) -> AddressRefused:
        if always_refused(ip):
            return AddressRefused(f"refusing to connect to {host}: {ip} is a link-local or cloud metadata "
                                  "address (always refused)")
        hint = f"; {self.hint}" if self.hint else ""
        return AddressRefused(f"refusing to connect to {host}: {ip} is not a public address{hint}")

    async def resolve(self, host: str, port: int, resolver: Resolver | None = None) -> list[IPAddress]:
        """Every address ``host`` resolves to, each permitted (a name with one refused answer among
        permitted ones is refused: the client could be steered to it)."""
        literal = _parse(host.strip("[]"))
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            try:
                answers = await (resolver or system_resolver)(host, port)
            except (OSError, UnicodeError) as exc:
                raise AddressRefused(f"cannot resolve {host}: {exc}", code="dns_error",
                                     retryable=True) from exc
            parsed = [_parse(a) for a in answers]
            addresses = list(dict.fromkeys(a for a in parsed if a is not None))
            if not addresses or None in parsed:
                raise AddressRefused(f"cannot resolve {host}", code="dns_error", retryable=True)
        for address in addresses:
            if not self.permits(host, port, address):
                raise self.refusal(host, address)
        return addresses

    async def check_url(self, url: str, resolver: Resolver | None = None) -> None:
        """Refuse ``url`` now, with a clear reason (when it is saved, or before a client is built); the
        connection itself is guarded again by :class:`PinnedTransport`."""
        parsed = check_scheme(url)
        await self.resolve(parsed.raw_host.decode("ascii"), _port(parsed), resolver)

    def transport(self, *, resolver: Resolver | None = None,
                  inner: httpx.AsyncBaseTransport | None = None) -> PinnedTransport:
        """The guard for a client of one service (a model, an embedder, a search provider): connections are
        kept alive, per host name."""
        return PinnedTransport(policy=self, resolver=resolver, inner=inner, keepalive=True)

    def transport2(self, *, resolver: Resolver | None = None,
                   inner: httpx2.AsyncBaseTransport | None = None) -> PinnedTransport2:
        """The same guard for ``httpx2`` clients (the openai and mcp SDKs are built on that fork)."""
        return PinnedTransport2(policy=self, resolver=resolver, inner=inner, keepalive=True)


PUBLIC_ONLY = OutboundPolicy()
PRIVATE_ALLOWED = OutboundPolicy(name="private-allowed", allow_private=True)
# URLs from the operator's settings (KNORA_CHAT_BASE_URL, KNORA_EMBEDDER_BASE_URL, web search …).
OPERATOR = OutboundPolicy(name="operator", allow_private=True)
ALLOW_HINT = ("the operator can allow it with KNORA_OUTBOUND_ALLOWED_HOSTS (host, host:port or CIDR) "
              "or KNORA_OUTBOUND_ALLOW_PRIVATE")


def tenant_policy(allowed_hosts: Iterable[str] = (), *, allow_private: bool = False) -> OutboundPolicy:
    """The policy for URLs tenants store through the API (model rows, MCP services)."""
    return OutboundPolicy(name="tenant", allow_private=allow_private,
                          allowed=tuple(AllowRule.parse(h) for h in allowed_hosts), hint=ALLOW_HINT)


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that connects only to an address it checked for each request.

    The request goes to ``inner`` with the IP in the URL, the original ``Host`` header, and the name as TLS
    SNI (httpcore's ``sni_hostname`` extension, which is also the name the certificate is verified against).
    A pooled connection is keyed by IP, and one verified for another name must not be reused for this one:
    without ``keepalive`` no connection is kept (a client of arbitrary hosts: URL import, ``web_fetch``);
    with it, each host name gets a pool of its own (a client of one service: a model's every call would
    otherwise pay a new TCP and TLS handshake). A name with several permitted addresses is tried address by
    address while the connection is refused (``localhost`` is ``::1`` first, and Ollama listens on
    127.0.0.1 only). ``policy`` says which addresses are permitted; ``allow_private`` (settings
    ``allow_private_network_fetch``) is the short form of the private-allowed policy, which still refuses
    link-local and cloud metadata addresses.
    """

    def __init__(self, *, allow_private: bool = False, policy: OutboundPolicy | None = None,
                 resolver: Resolver | None = None, inner: httpx.AsyncBaseTransport | None = None,
                 keepalive: bool = False) -> None:
        self._policy = policy or (PRIVATE_ALLOWED if allow_private else PUBLIC_ONLY)
        self._resolver = resolver
        self._fixed = inner
        self._keepalive = keepalive
        self._pools: dict[str, httpx.AsyncBaseTransport] = {}

    def _inner(self, host: str) -> httpx.AsyncBaseTransport:
        if self._fixed is not None:
            return self._fixed
        key = host if self._keepalive else ""
        pool = self._pools.get(key)
        if pool is None:
            limits = httpx.Limits() if self._keepalive else httpx.Limits(max_keepalive_connections=0)
            pool = self._pools[key] = httpx.AsyncHTTPTransport(limits=limits)
        return pool

    @property
    def policy(self) -> OutboundPolicy:
        return self._policy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            raise AddressRefused(f"unsupported URL: {url}", code="invalid_url")
        host = url.raw_host.decode("ascii")  # IDNA-encoded: what DNS and SNI take
        addresses = await self._policy.resolve(host, _port(url), self._resolver)
        for i, ip in enumerate(addresses):
            pinned = httpx.Request(request.method, url.copy_with(host=str(ip)), headers=request.headers,
                                   stream=request.stream,
                                   extensions={**request.extensions, "sni_hostname": host})
            try:
                return await self._inner(host).handle_async_request(pinned)
            except httpx.ConnectError:
                if i == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        for pool in [*self._pools.values(), *([self._fixed] if self._fixed is not None else [])]:
            await pool.aclose()
        self._pools.clear()


class PinnedTransport2(httpx2.AsyncBaseTransport):
    """:class:`PinnedTransport` for ``httpx2`` (same API, separate types): the openai client and the MCP SDK
    take an ``httpx2.AsyncClient``, and their connections must be pinned as well."""

    def __init__(self, *, policy: OutboundPolicy, resolver: Resolver | None = None,
                 inner: httpx2.AsyncBaseTransport | None = None, keepalive: bool = False) -> None:
        self._policy = policy
        self._resolver = resolver
        self._fixed = inner
        self._keepalive = keepalive
        self._pools: dict[str, httpx2.AsyncBaseTransport] = {}

    def _inner(self, host: str) -> httpx2.AsyncBaseTransport:
        if self._fixed is not None:
            return self._fixed
        key = host if self._keepalive else ""
        pool = self._pools.get(key)
        if pool is None:
            limits = httpx2.Limits() if self._keepalive else httpx2.Limits(max_keepalive_connections=0)
            pool = self._pools[key] = httpx2.AsyncHTTPTransport(limits=limits)
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme not in ("http", "https") or not url.host:
            raise AddressRefused(f"unsupported URL: {url}", code="invalid_url")
        host = url.raw_host.decode("ascii")
        addresses = await self._policy.resolve(host, url.port or (443 if url.scheme == "https" else 80),
                                               self._resolver)
        for i, ip in enumerate(addresses):
            pinned = httpx2.Request(request.method, url.copy_with(host=str(ip)), headers=request.headers,
                                    stream=request.stream,
                                    extensions={**request.extensions, "sni_hostname": host})
            try:
                return await self._inner(host).handle_async_request(pinned)
            except httpx2.ConnectError:
                if i == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        for pool in [*self._pools.values(), *([self._fixed] if self._fixed is not None else [])]:
            await pool.aclose()
        self._pools.clear()


def pinned_client(*, allow_private: bool, timeout: float, headers: dict[str, str] | None = None,
                  resolver: Resolver | None = None,
                  inner: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request goes through :class:`PinnedTransport` (no redirects
    followed by the client: callers follow them hop by hop, and each hop is a new checked request)."""
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, headers=headers,
                             transport=PinnedTransport(allow_private=allow_private, resolver=resolver,
                                                       inner=inner))


@dataclass(frozen=True)
class Outbound:
    """The two policies of a running server: ``operator`` for URLs from settings, ``tenant`` for URLs stored
    through the API. Built once from settings (:meth:`from_settings`) and handed to every client factory."""

    operator: OutboundPolicy = OPERATOR
    tenant: OutboundPolicy = PUBLIC_ONLY

    @classmethod
    def from_settings(cls, allowed_hosts: Iterable[str], allow_private: bool) -> Outbound:
        return cls(operator=OPERATOR, tenant=tenant_policy(allowed_hosts, allow_private=allow_private))
