"""A real HTTP server (uvicorn, in this process, free port) for tests that need true streaming.

httpx's ASGI transport buffers whole responses, so live frames, disconnects and keep-alives need a socket.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn

from tests.conftest import TEST_API_KEY


@asynccontextmanager
async def live_client(container: Any) -> AsyncIterator[httpx.AsyncClient]:
    from knora.api.app import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(services=container), host="127.0.0.1", port=0,
                                           log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": TEST_API_KEY},
                                     timeout=60) as http:
            yield http
    finally:
        server.should_exit = True
        await task


async def frames(response: httpx.Response) -> AsyncIterator[dict[str, Any] | None]:
    """Frames of a live SSE response as they arrive (``None`` for a keep-alive comment)."""
    buf = ""
    async for chunk in response.aiter_text():
        buf += chunk
        while "\n\n" in buf:
            block, buf = buf.split("\n\n", 1)
            if block.startswith(":"):
                yield None
                continue
            event, data = block.split("\n")
            assert event == "event:message"
            assert data.startswith("data:{")
            yield json.loads(data[5:])
