"""CORS from settings, closed by default, and never open on the routes that hand out keys.

``settings.cors_origins`` is empty unless the operator lists origins: Knora's UI is served by Knora
itself (same-origin, no CORS needed), and an open ``*`` let any web page read the API's answers. Even when an
operator lists ``*`` for the rest of the API, the key-minting routes (``KEY_ROUTES``) answer CORS only for
origins listed by name, and auto-setup answers none at all, so no page on another origin can read a key.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

# Routes whose answer carries a key or token (paths under the API prefix).
KEY_ROUTES: frozenset[str] = frozenset({"/auth/login", "/auth/refresh"})
# Routes that answer no cross-origin request at all: the UI calls them same-origin.
SAME_ORIGIN_ROUTES: frozenset[str] = frozenset({"/auth/auto-setup"})

ALLOW_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ALLOW_HEADERS = ["Origin", "Content-Type", "Accept", "Authorization", "X-API-Key", "X-Request-ID",
                 "X-Tenant-ID", "Last-Event-ID", "Mcp-Session-Id", "Mcp-Protocol-Version",
                 "X-Knora-Session-Id"]
# Response headers a browser page may read: the request id, the MCP session, and the session and message of
# a /v1 stored turn
EXPOSE_HEADERS = ["X-Request-ID", "Mcp-Session-Id", "X-Knora-Session-Id", "X-Knora-Message-Id"]


class KnoraCors:
    """Starlette's CORS middleware, chosen per path: the listed origins for the API, named origins only for
    ``KEY_ROUTES``, none for ``SAME_ORIGIN_ROUTES``."""

    def __init__(self, app: ASGIApp, *, origins: Sequence[str], prefix: str) -> None:
        self.app = app
        named = [o for o in origins if o != "*"]
        self.general = CORSMiddleware(app, allow_origins=list(origins), allow_methods=ALLOW_METHODS,
                                      allow_headers=ALLOW_HEADERS, expose_headers=EXPOSE_HEADERS)
        self.keys = CORSMiddleware(app, allow_origins=named, allow_methods=ALLOW_METHODS,
                                   allow_headers=ALLOW_HEADERS, expose_headers=EXPOSE_HEADERS)
        self.key_paths = {prefix + p for p in KEY_ROUTES}
        self.same_origin_paths = {prefix + p for p in SAME_ORIGIN_ROUTES}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", "")).rstrip("/")
        if scope["type"] != "http" or path in self.same_origin_paths:
            await self.app(scope, receive, send)
        elif path in self.key_paths:
            await self.keys(scope, receive, send)
        else:
            await self.general(scope, receive, send)
