"""Per-caller request budgets (issue 20): 429 with the envelope and ``Retry-After`` once a caller's budget is
spent.

A caller is the API key or signed-in user it authenticates as (known keys are answered from the tenant
service's memory), or its client address when it sends none or an unknown one — so rotating made-up keys
buys nothing.
Every ``/api/v1``, ``/mcp`` and ``/v1`` request spends one unit of ``rate_limit_per_minute``; the expensive
calls (a chat turn, a ``/v1`` chat completion, a search, an upload, a URL import, a manual document, an
evaluation run: model calls and embedding work; over MCP the ``search_knowledge``, ``ask`` and
``add_document`` tools, through ``spend_heavy``) also spend one of ``rate_limit_heavy_per_minute``.
``/health``, the web UI's files and the API docs are not counted; CORS preflights neither. Requests from this
machine are not counted either unless ``rate_limit_loopback`` is on: a loopback client address that no proxy
forwarded (``X-Forwarded-For``/``Forwarded`` mark a proxied request, whose client is somewhere else). When
the limiter itself fails (Redis down), requests pass: a budget is not worth an outage.
"""

from __future__ import annotations

import logging
import math
import re

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from knora.api.deps import AUTHENTICATED, authenticate
from knora.api.envelope import error
from knora.api.same_origin import is_loopback
from knora.domain.errors import AppError
from knora.ports.rate_limit import Budget, Decision
from knora.root import Services

log = logging.getLogger(__name__)

TOO_MANY_REQUESTS_CODE = 1006  # WeKnora's ErrTooManyRequests
_HEAVY = re.compile(r"/(knowledge-chat|agent-chat)/[^/]+/?$|/(knowledge-search|hybrid-search|faq/search)/?$"
                    r"|/knowledge-bases/[^/]+/knowledge/(file|url|manual)/?$|^/v1/chat/completions/?$"
                    r"|^/api/v1/evaluation/?$")


def is_heavy(method: str, path: str) -> bool:
    return method == "POST" and _HEAVY.search(path) is not None


def from_this_machine(scope: Scope) -> bool:
    """A loopback client that no proxy forwarded: a local script, the CLI, a browser on this machine."""
    client = scope.get("client")
    if not client or not is_loopback(str(client[0])):
        return False
    headers = Headers(scope=scope)
    return "x-forwarded-for" not in headers and "forwarded" not in headers


async def caller(scope: Scope, services: Services) -> str:
    """``key:<id>`` for a known key, ``user:<id>`` for a signed-in user, else ``ip:<client address>``. The
    principal found (or None) is left on the request's state for the authentication dependency, so a key is
    looked up once; a request the dependency must refuse with its own answer (a malformed ``X-Tenant-ID``, a
    key of another tenant) is left for it to resolve again."""
    try:
        found = await authenticate(Headers(scope=scope), services.access)
    except AppError:
        found = None
    else:
        scope.setdefault("state", {})[AUTHENTICATED] = found
    if found is not None:
        return found.caller
    client = scope.get("client")
    return "ip:" + (client[0] if client else "unknown")


async def spend_heavy(services: Services, who: str) -> Decision | None:
    """One unit of ``who``'s heavy budget for an expensive call that is not a route of its own (an MCP tool
    call over ``/mcp``); the refusal, or None. The same budget as the heavy routes'."""
    limit = services.settings.rate_limit_heavy_per_minute
    if limit <= 0:
        return None
    try:
        decision = await services.rate_limiter.hit(f"heavy:{who}", Budget(limit, 60.0))
    except Exception:
        log.warning("rate limiter unavailable; request let through", exc_info=True)
        return None
    return None if decision.allowed else decision


class RateLimitMiddleware:
    """Budgets for the paths under ``prefix`` (one prefix, or several as a tuple)."""

    def __init__(self, app: ASGIApp, prefix: str | tuple[str, ...]) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exempt = scope["type"] != "http" or scope["method"] == "OPTIONS"
        if exempt or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        services: Services = scope["app"].state.services
        refused = await self._check(scope, services)
        if refused is None:
            await self.app(scope, receive, send)
            return
        wait = max(1, math.ceil(refused.retry_after))
        response = error(429, TOO_MANY_REQUESTS_CODE,
                         f"Too many requests: this caller's budget is spent, retry after {wait} s")
        response.headers["Retry-After"] = str(wait)
        await response(scope, receive, send)

    async def _check(self, scope: Scope, services: Services) -> Decision | None:
        """The refusal, or None when the request may run."""
        s = services.settings
        budgets = [("all", s.rate_limit_per_minute)]
        if is_heavy(scope["method"], scope["path"]):
            budgets.insert(0, ("heavy", s.rate_limit_heavy_per_minute))
        budgets = [(name, limit) for name, limit in budgets if limit > 0]
        if not budgets or (not s.rate_limit_loopback and from_this_machine(scope)):
            return None
        try:
            who = await caller(scope, services)
            for name, limit in budgets:
                decision = await services.rate_limiter.hit(f"{name}:{who}", Budget(limit, 60.0))
                if not decision.allowed:
                    return decision
        except Exception:
            log.warning("rate limiter unavailable; request let through", exc_info=True)
        return None
