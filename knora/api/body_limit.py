"""Request bodies are counted while they arrive and refused (413, the envelope) once past their limit.

A route's own size check came too late for a body without ``Content-Length``: a 200 MB upload sent with
``Transfer-Encoding: chunked`` was spooled whole to a temporary file by the multipart parser before the route
saw the file and answered 413 (issue 20, item 4f). This ASGI middleware sits in front of every route:

- a declared ``Content-Length`` over the limit is answered 413 at once, before the app runs;
- otherwise the ``receive`` the app reads the body through counts the bytes, and the read that passes the
  limit raises ``PayloadTooLarge``, which the route lets through to the error handler (a 413).

Either 413 carries ``Connection: close``: uvicorn would otherwise keep the connection and read (and drop)
the rest of the body, all 200 MB of it (or forever), to serve a next request on it. The close lingers, as
nginx's does: after the answer the server reads and drops at most ``LINGER_BYTES`` for ``LINGER_SECONDS``
before it closes, because closing a socket with unread data sends a TCP reset, which makes the client's
kernel drop the 413 it has not read yet. A client that reads while it sends (curl, browsers) sees the 413
and stops within that time; one that only reads after sending everything gets the reset.

Limits: a document upload may carry ``max_upload_bytes`` of file plus the multipart framing around it; every
other body (chat requests, JSON) ``max_chat_body_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knora.api.envelope import error
from knora.domain.errors import PayloadTooLarge

# Room for the multipart framing and the small form fields (fileName, metadata…) next to the file.
MULTIPART_OVERHEAD = 64 * 1024
LINGER_BYTES = 8 * 1024 * 1024
LINGER_SECONDS = 2.0
_UPLOAD = re.compile(r"/knowledge-bases/[^/]+/knowledge/file/?$")


def limits(max_upload_bytes: int, max_body_bytes: int) -> Callable[[str], int]:
    """The byte limit of a request path: uploads get the upload limit, everything else the body limit."""

    def limit_for(path: str) -> int:
        return max_upload_bytes + MULTIPART_OVERHEAD if _UPLOAD.search(path) else max_body_bytes

    return limit_for


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"Request body too large (max {limit} bytes)")


class BodyLimitMiddleware:
    """Counts each HTTP request's body bytes against ``limit_for(path)``."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        refused = False
        linger = _Linger(receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            exc = _too_large(limit)
            await error(exc.status, exc.code, exc.message)(scope, receive, linger.send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    raise _too_large(limit)
            return message

        async def send_or_linger(message: Message) -> None:
            await (linger.send if refused else send)(message)

        await self.app(scope, counted, send_or_linger)


class _Linger:
    """Sends a refusal with ``Connection: close``, then drops what the client still sends (bounded) before
    letting the server close the connection (why: the module docstring)."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self.receive, self._send = receive, send

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        if message["type"] != "http.response.body" or message.get("more_body", False):
            await self._send(message)
            return
        await self._send({**message, "more_body": True})  # the whole answer is out; the close waits
        await self._drain()
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _drain(self) -> None:
        dropped = 0
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LINGER_SECONDS):
                while dropped <= LINGER_BYTES:
                    message = await self.receive()
                    if message["type"] != "http.request" or not message.get("more_body", False):
                        return
                    dropped += len(message.get("body", b""))
