"""``knora_http_*`` metrics of every request: method, route template (never the raw path, whose ids would grow
the scrape without bound), status and time to the end of the body.

A plain ASGI middleware, like ``request_id.py``: a streaming response's chunks pass straight through. The
route template is what the router matched (``scope["route"]``); a request no route matched is counted as
``unmatched``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knora.ports.telemetry import Metrics

UNMATCHED = "unmatched"


def route_of(scope: Scope) -> str:
    """The template of the route that answered, with the prefix its router was included under.

    FastAPI puts the route as declared in its router in ``scope["route"]`` (``/knowledge-bases/{id}``); the
    prefix is the part of the request path before the segments the template matched, and prefixes here are
    fixed strings (``/api/v1``, ``/v1``), never ids."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if not isinstance(template, str) or not template:
        return UNMATCHED
    if isinstance(route, Mount):
        return template + "/{path}"
    if ":path}" in template:
        return template
    segments = str(scope.get("path", "")).rstrip("/").split("/")
    own = template.rstrip("/").count("/")
    return "/".join(segments[: max(1, len(segments) - own)]) + template if own < len(segments) else template


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Callable[[], Metrics]) -> None:
        """``metrics`` is read per request: the app's services are built in its lifespan, after this."""
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        metrics = self.metrics()
        metrics.http_in_flight(1)
        started = time.perf_counter()
        status = 500  # no response started: the client sees the server fail

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            metrics.http_in_flight(-1)
            metrics.http_request(str(scope.get("method", "")), route_of(scope), status,
                                 time.perf_counter() - started)
