"""``/mcp``: the MCP server over Streamable HTTP on the running app, authenticated like the API.

Every request must present a key the API accepts (``X-API-Key`` or ``Authorization: Bearer``); without one
it is answered 401 with the API's envelope before the SDK sees it. The tenant found is put on the request
(``state.Caller``) and every tool call of that request acts as that tenant. The SDK runs stateless: each
request is served on its own, so any replica behind a load balancer can answer any request, and no session
can outlive or change its caller.

The app's middleware applies as to the API: the body limit (``max_chat_body_bytes``, also given to the
SDK's own limit), CORS (``cors_origins``; closed by default) and the request budget (``/mcp`` is under the
rate limiter); search, ask and add_document also spend the heavy budget. The SDK's DNS-rebinding host check
is off: it would refuse a server reached by any name but localhost, and a rebinding page cannot know the
API key every request needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from knora.api.deps import AUTHENTICATED, authenticate, credentials
from knora.api.envelope import error
from knora.api.mcp_server.server import build_server
from knora.api.mcp_server.state import CALLER, Caller, McpState
from knora.api.rate_limit import from_this_machine
from knora.domain.errors import AppError, Unauthorized, Unavailable
from knora.root import Services

MCP_PATH = "/mcp"


class McpEndpoint:
    """The ASGI app at ``/mcp``; serves while ``running(services)`` is entered (the app's lifespan)."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._services: Services | None = None

    @asynccontextmanager
    async def running(self, services: Services) -> AsyncIterator[None]:
        @asynccontextmanager
        async def lifespan(_: MCPServer[McpState]) -> AsyncIterator[McpState]:
            yield McpState(services=services)

        server = build_server(lifespan)
        server.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True,
            max_request_body_size=services.settings.max_chat_body_bytes,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        manager = server.session_manager
        async with manager.run():
            self._manager, self._services = manager, services
            try:
                yield
            finally:
                self._manager = self._services = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager, services = self._manager, self._services
        if manager is None or services is None:
            exc: Unavailable | Unauthorized = Unavailable("The MCP endpoint is not running")
            await error(exc.status, exc.code, exc.message)(scope, receive, send)
            return
        headers = Headers(scope=scope)
        caller = await _caller(scope, headers, services)
        if caller is None:
            exc = Unauthorized("Unauthorized: missing authentication" if not credentials(headers)
                               else "Unauthorized: invalid API key")
            response = error(exc.status, exc.code, exc.message)
            response.headers["WWW-Authenticate"] = 'Bearer realm="knora"'
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[CALLER] = caller
        await manager.handle_request(scope, receive, send)


async def _caller(scope: Scope, headers: Headers, services: Services) -> Caller | None:
    """The authenticated caller, reusing the rate limiter's lookup when it made one."""
    if not credentials(headers):
        return None
    state = scope.get("state", {})
    if AUTHENTICATED in state:
        found = state[AUTHENTICATED]
    else:
        try:
            found = await authenticate(headers, services.access)  # a known key is answered from memory
        except AppError:
            found = None
    if found is None or not found.in_tenant:
        return None
    unlimited = not services.settings.rate_limit_loopback and from_this_machine(scope)
    owner = None if unlimited else found.caller
    return Caller(tenant_id=found.tenant_id, budget_owner=owner, role=found.role, user_id=found.user_id)
