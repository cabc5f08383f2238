"""``knora.cli.client.ApiClient`` over an injected transport: a rate limit is waited out, refusals carry the
server's message, the SSE frames come out whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from knora.cli.client import ApiClient, ApiError, Server, sse_frames

pytestmark = pytest.mark.unit

SERVER = Server("http://127.0.0.1:8080", "sk-key", "server.json")


async def test_a_429_is_waited_out_with_its_retry_after() -> None:
    seen: list[httpx.Request] = []
    waits: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"message": "slow down"}})
        return httpx.Response(200, json={"success": True, "data": [{"id": "kb1"}]})

    async with ApiClient(SERVER, transport=httpx.MockTransport(answer), on_wait=waits.append) as api:
        assert await api.data("GET", "/knowledge-bases") == [{"id": "kb1"}]
    assert len(seen) == 2
    assert waits == [0.05]  # at least a twentieth of a second, never a busy loop
    assert seen[0].headers["x-api-key"] == "sk-key"
    assert seen[0].url.path == "/api/v1/knowledge-bases"


async def test_refusals_carry_the_servers_message() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/missing"):
            return httpx.Response(404, json={"success": False, "error": {"code": 1, "message": "Not found"}})
        return httpx.Response(401, json={"success": False, "error": {"message": "Unauthorized"}})

    async with ApiClient(SERVER, transport=httpx.MockTransport(answer)) as api:
        with pytest.raises(ApiError) as missing:
            await api.data("GET", "/missing")
        assert (missing.value.status, missing.value.message) == (404, "Not found")
        with pytest.raises(ApiError, match="set KNORA_API_KEY"):
            await api.data("GET", "/knowledge-bases")
        conflict = await api.request("GET", "/missing", ok=(404,))  # a status the caller handles itself
        assert conflict.status_code == 404


async def test_an_unreachable_server_named_by_knora_url_says_so() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    named = Server("http://127.0.0.1:9", None, "KNORA_URL")
    unreachable = r"cannot reach the Knora server at http://127\.0\.0\.1:9: connection refused.*KNORA_URL"
    async with ApiClient(named, transport=httpx.MockTransport(refuse)) as api:
        with pytest.raises(ApiError, match=unreachable):
            await api.data("GET", "/knowledge-bases")


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def test_sse_frames_skip_comments_and_join_data_lines() -> None:
    frames = [f async for f in sse_frames(_lines(
        ": keep-alive", "", "event:message", 'data:{"response_type":"answer","content":"Hi"}', "",
        "event:message", 'data: {"response_type":"answer",', 'data:"content":"!"}', "",
        'data:{"response_type":"complete"}'))]
    assert frames == [{"response_type": "answer", "content": "Hi"},
                      {"response_type": "answer", "content": "!"}, {"response_type": "complete"}]


async def test_a_frame_that_is_not_json_is_a_clear_error() -> None:
    with pytest.raises(ApiError, match="not JSON"):
        [f async for f in sse_frames(_lines("data:{broken", ""))]


async def test_a_stream_cut_midway_is_a_clear_error() -> None:
    class Cut(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b'event:message\ndata:{"response_type":"answer","content":"Hi"}\n\n'
            raise httpx.RemoteProtocolError("peer closed connection")

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Cut(), headers={"content-type": "text/event-stream"})

    got: list[dict[str, object]] = []

    async def read(api: ApiClient) -> None:
        async with api.stream("POST", "/knowledge-chat/s", {"query": "q"}) as response:
            async for frame in sse_frames(api.lines(response)):
                got.append(frame)

    async with ApiClient(SERVER, transport=httpx.MockTransport(answer)) as api:
        with pytest.raises(ApiError, match="connection to the server at http://127.0.0.1:8080 was lost"):
            await read(api)
    assert got == [{"response_type": "answer", "content": "Hi"}]  # what arrived before the cut is kept
