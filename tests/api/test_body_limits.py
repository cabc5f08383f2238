"""Bodies sent without ``Content-Length`` (``Transfer-Encoding: chunked``) are counted as they arrive and
refused once past the limit, and the server stops reading them (issue 20, item 4f).

Real sockets: httpx's ASGI transport would hand the app the whole body at once. The 200 MB bodies are sent
by a small client that reads the answer while it sends, as curl and browsers do (httpx reads only after
sending everything, so it cannot show that the server stopped early: it would get the connection's reset).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.settings import Settings
from tests.conftest import TEST_API_KEY, started
from tests.services.streaming.live import live_client

pytestmark = pytest.mark.integration

MB = 1024 * 1024
SENT_AT_MOST = 200 * MB


class Source:
    """A body of ``head``, then filler up to 200 MB, then ``tail``; counts what was taken from it."""

    def __init__(self, head: bytes = b"", tail: bytes = b"", total: int = SENT_AT_MOST) -> None:
        self.head, self.tail, self.total = head, tail, total
        self.sent = 0
        self.finished = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        piece = b"x" * (64 * 1024)
        yield self.head
        self.sent += len(self.head)
        while self.sent < self.total:
            yield piece
            self.sent += len(piece)
        yield self.tail
        self.finished = True


@pytest.fixture
async def http(make_settings: Callable[..., Settings]) -> AsyncIterator[httpx.AsyncClient]:
    async with started(make_settings(max_upload_bytes=MB, max_chat_body_bytes=MB)) as c, \
            live_client(c) as client:
        yield client


async def post_streaming(http: httpx.AsyncClient, path: str, source: Source, content_type: str,
                         declared: int | None = None) -> tuple[int, dict[str, str], Any]:
    """POSTs ``source`` chunked (or with a declared ``Content-Length``) over a raw socket, reading the answer
    while sending; stops sending once the answer is in. Returns status, headers and the JSON body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", http.base_url.port)
    framing = f"Content-Length: {declared}" if declared is not None else "Transfer-Encoding: chunked"
    writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {TEST_API_KEY}\r\n"
                 f"Content-Type: {content_type}\r\n{framing}\r\n\r\n".encode())

    async def pump() -> None:
        async for piece in source:
            if piece:
                writer.write(piece if declared is not None else b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
        writer.write(b"" if declared is not None else b"0\r\n\r\n")
        await writer.drain()

    sending = asyncio.create_task(pump())
    try:
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).decode()
        status = int(head.split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, v in
                   (line.split(":", 1) for line in head.split("\r\n")[1:] if ":" in line)}
        body = json.loads(await reader.readexactly(int(headers["content-length"])))
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await sending
        writer.close()
    return status, headers, body


def _refused(status: int, headers: dict[str, str], body: Any, source: Source) -> None:
    assert status == 413, body
    assert body["success"] is False
    assert body["error"]["code"] == 1000
    assert "too large" in body["error"]["message"]
    assert headers["connection"] == "close"
    assert not source.finished
    assert source.sent < 20 * MB  # stopped near the 1 MB limit (plus socket buffers), not after 200 MB


async def test_a_chunked_upload_is_refused_as_it_passes_the_limit(http: httpx.AsyncClient) -> None:
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": "limits"})).json()["data"]["id"]
    source = Source(head=b'--zz\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
                         b"Content-Type: text/plain\r\n\r\n",
                    tail=b"\r\n--zz--\r\n")
    _refused(*await post_streaming(http, f"/api/v1/knowledge-bases/{kb}/knowledge/file", source,
                                   "multipart/form-data; boundary=zz"), source)
    listed = await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge")
    assert listed.json()["total"] == 0  # the server is alive and nothing was stored


async def test_a_chunked_chat_body_is_refused_as_it_passes_the_limit(http: httpx.AsyncClient) -> None:
    source = Source(head=b'{"query": "', tail=b'"}')
    _refused(*await post_streaming(http, f"/api/v1/knowledge-chat/{uuid.uuid4()}", source,
                                   "application/json"), source)


async def test_a_chunked_json_body_is_refused_as_it_passes_the_limit(http: httpx.AsyncClient) -> None:
    source = Source(head=b'{"title": "', tail=b'"}')
    _refused(*await post_streaming(http, "/api/v1/sessions", source, "application/json"), source)
    assert (await http.get("/api/v1/sessions")).json()["total"] == 0


async def test_a_declared_length_over_the_limit_is_refused_before_reading(http: httpx.AsyncClient) -> None:
    source = Source(head=b'{"title": "', tail=b'"}')
    _refused(*await post_streaming(http, "/api/v1/sessions", source, "application/json",
                                   declared=SENT_AT_MOST + 13), source)


async def test_a_client_that_reads_after_sending_still_gets_the_413(http: httpx.AsyncClient) -> None:
    """httpx sends the whole body first: a body a little over the limit is read to its end (the linger)
    and answered 413, not reset."""
    source = Source(head=b'{"title": "', tail=b'"}', total=3 * MB)
    r = await http.post("/api/v1/sessions", content=source, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == 1000
    assert source.finished


async def test_bodies_within_the_limit_still_pass(http: httpx.AsyncClient) -> None:
    async def small() -> AsyncIterator[bytes]:
        for part in (b'{"title": ', b'"chunked"}'):
            yield part

    r = await http.post("/api/v1/sessions", content=small(), headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json()["data"]["title"] == "chunked"
    again = await http.post("/api/v1/sessions", json={"title": "same connection"})
    assert again.status_code == 201
