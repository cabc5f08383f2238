"""Issue 20 item 4c: the SSRF guard connects to the address it checked (no DNS rebinding), and refuses every
non-public range, in URL import, ``web_fetch`` and the pipeline's page fetch alike."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from knora import netguard
from knora.adapters.tools import _netguard as tool_guard
from knora.adapters.tools import web_fetch
from knora.adapters.websearch.fetch import PageFetcher
from knora.domain.errors import BadRequest
from knora.ports.tool import ToolContext, ToolDeps
from knora.services.ingest import fetch as ingest_fetch
from knora.settings import Settings

REFUSED = ["100.100.100.200", "100.64.0.1", "100.127.255.254", "0.1.2.3", "0.0.0.0", "192.0.0.8",
           "192.0.0.170", "198.18.0.1", "198.19.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1",
           "255.255.255.255", "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
           "192.0.2.1", "198.51.100.1", "203.0.113.1",
           "::", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:100.100.100.200",
           "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::1", "2002:7f00:1::",
           "2002:a9fe:a9fe::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1"]
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8",
          "2002:808:808::1"]


@pytest.mark.parametrize("address", REFUSED)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not netguard.is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert netguard.is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("host", ["100.100.100.200", "[64:ff9b::a9fe:a9fe]", "[::ffff:127.0.0.1]",
                                  "198.18.0.1", "192.0.0.8"])
async def test_every_entry_point_refuses_the_ranges(host: str) -> None:
    url = f"http://{host}/latest/meta-data"
    with pytest.raises(tool_guard.FetchRefused):
        await tool_guard.check_url(url, allow_private=False)
    with pytest.raises(BadRequest):
        await ingest_fetch.check_public(url, False)
    hits: list[httpx.Request] = []
    never = httpx.MockTransport(lambda req: hits.append(req) or httpx.Response(200))
    with pytest.raises(BadRequest):
        await ingest_fetch.fetch(url, max_bytes=1000, timeout=2, allow_private=False, transport=never)
    fetcher = PageFetcher(transport=never)
    with pytest.raises(netguard.AddressRefused):
        await fetcher(url)
    await fetcher.close()
    assert hits == []


async def test_a_name_with_one_private_answer_is_refused() -> None:
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "100.100.100.200"]

    with pytest.raises(netguard.AddressRefused):
        await netguard.resolve_public("mixed.test", 80, mixed)


async def test_the_request_goes_to_the_checked_ip_with_host_and_sni_for_the_name() -> None:
    seen: list[httpx.Request] = []

    def record(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, text="ok")

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    async with netguard.pinned_client(allow_private=False, timeout=2, resolver=resolver,
                                      inner=httpx.MockTransport(record)) as client:
        r = await client.get("https://bücher.example:8443/a?b=1")
    assert r.text == "ok"
    assert str(r.url) == "https://xn--bcher-kva.example:8443/a?b=1"  # the caller sees the name, not the IP
    (sent,) = seen
    assert sent.url.host == "93.184.215.14"
    assert sent.url.port == 8443
    assert sent.url.raw_path == b"/a?b=1"
    assert sent.headers["host"] == "xn--bcher-kva.example:8443"
    assert sent.extensions["sni_hostname"] == "xn--bcher-kva.example"


# --- DNS rebinding against real sockets --------------------------------------------------------------------

class _Site(BaseHTTPRequestHandler):
    hits: list[str]
    body: bytes

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        return


def _serve(host: str, port: int, body: bytes) -> tuple[ThreadingHTTPServer, list[str]]:
    hits: list[str] = []
    handler = type("Handler", (_Site,), {"hits": hits, "body": body})
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, hits


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, list[str], list[str]]]:
    """``rebind.test`` answers 127.0.0.2 (a stand-in for a public site, made public for this test) on the
    first lookup and 127.0.0.1 (a loopback recorder on the same port) on every later one — for every resolver
    in the process, so a second resolution by the HTTP client would reach the recorder. (Against main, where
    the guard checked and the client resolved again, the recorder got one hit per fetch.)"""
    recorder, recorder_hits = _serve("127.0.0.1", 0, b"internal secret")
    port = recorder.server_address[1]
    public, public_hits = _serve("127.0.0.2", port, b"public page")
    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("rebind.test", b"rebind.test"):
            lookups.append(str(host))
            ip = "127.0.0.2" if len(lookups) == 1 else "127.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    real_is_public = netguard.is_public
    monkeypatch.setattr(netguard, "is_public",
                        lambda ip: str(ip) == "127.0.0.2" or real_is_public(ip))
    yield port, public_hits, recorder_hits
    for server in (recorder, public):
        server.shutdown()
        server.server_close()


async def _via_ingest(url: str) -> str:
    return (await ingest_fetch.fetch(url, max_bytes=10_000, timeout=5, allow_private=False)).data.decode()


async def _via_page_fetcher(url: str) -> str:
    fetcher = PageFetcher(timeout=5)
    try:
        return await fetcher(url)
    finally:
        await fetcher.close()


async def _via_web_fetch_tool(url: str) -> str:
    tool = web_fetch.WebFetchTool(ToolDeps(settings=Settings(sample_kb=False)))
    res = await tool.execute({"items": [{"url": url}]}, ToolContext(tenant_id=1))
    page = res.data["pages"][0]
    assert page["status"] == "success", page
    return str(page["content"])


@pytest.mark.parametrize("fetch", [_via_ingest, _via_page_fetcher, _via_web_fetch_tool])
async def test_dns_rebinding_never_reaches_loopback(rebinding: tuple[int, list[str], list[str]],
                                                    fetch: Callable[[str], Awaitable[str]]) -> None:
    port, public_hits, recorder_hits = rebinding
    text = await fetch(f"http://rebind.test:{port}/page")
    assert text.strip() == "public page"
    assert public_hits == ["/page"]
    assert recorder_hits == []


async def test_a_service_client_keeps_connections_per_host_name_and_never_across_names() -> None:
    """A model's client reuses its connection (no handshake per call); a connection made for one name is not
    reused for another name on the same address; the arbitrary-host fetcher keeps none."""
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def resolver(_host: str, _port: int) -> list[str]:
        return ["127.0.0.1"]

    try:
        async with httpx.AsyncClient(transport=netguard.OPERATOR.transport(resolver=resolver)) as http:
            for name in ("a.test", "a.test", "a.test", "b.test", "b.test"):
                assert (await http.get(f"http://{name}:{port}/")).text == "ok"
        assert len(accepted) == 2  # one connection per name
        accepted.clear()
        async with netguard.pinned_client(allow_private=True, timeout=5, resolver=resolver) as http:
            for _ in range(3):
                assert (await http.get(f"http://a.test:{port}/")).text == "ok"
        assert len(accepted) == 3  # the arbitrary-host client keeps nothing
    finally:
        server.close()
        await server.wait_closed()
