"""``X-Request-ID`` on every response (the client's own, or a new uuid), also as ``request.state.request_id``.

A plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` (``@app.middleware("http")``) passes every chunk
of a streaming response through an extra in-memory stream and task, which on SSE responses cost a share of the
CPU of every frame.
"""

from __future__ import annotations

import uuid

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = ""
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                rid = value.decode("latin-1")
                break
        rid = rid or str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["X-Request-ID"] = rid
            await send(message)

        await self.app(scope, receive, send_with_id)
