"""Who a tool call acts for, and the services it runs on.

The server's lifespan yields ``McpState``: the running services, plus the caller of a stdio server (fixed for
the process: the tenant chosen at start-up). Over HTTP every request is authenticated on its own
(``http.py``) and the request carries its ``Caller``; a request never falls back to a tenant it did not
authenticate as.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from starlette.requests import Request

from knora.api.rate_limit import spend_heavy
from knora.domain.access import Role
from knora.domain.errors import AppError, Forbidden, Unauthorized
from knora.root import Services

CALLER = "knora.mcp.caller"  # key of the request state's Caller (set by the HTTP endpoint)


@dataclass(frozen=True)
class Caller:
    tenant_id: int
    budget_owner: str | None = None  # the rate limiter's caller key (HTTP); None: no budgets (stdio)
    user_id: str | None = None  # a signed-in user (HTTP with a user's token); None: an API key
    role: Role = Role.OWNER  # HTTP: the key's or user's role; stdio: the operator who started the process

    def require(self, role: Role) -> None:
        """Refuses a tool call the caller's role does not allow (as ``knora.api.policy`` does routes)."""
        if not self.role.covers(role):
            raise Forbidden(f"Forbidden: this needs the {role.value} role; you are {self.role.value}")


@dataclass(frozen=True)
class McpState:
    services: Services
    caller: Caller | None = None  # stdio: the process's caller; HTTP: None (each request brings its own)


McpContext = Context[McpState, Any]


def state_of(ctx: McpContext) -> McpState:
    state: McpState = ctx.request_context.lifespan_context
    return state


def caller_of(ctx: McpContext) -> Caller:
    request = ctx.request_context.request
    if isinstance(request, Request):
        found = request.scope.get("state", {}).get(CALLER)
        if isinstance(found, Caller):
            return found
        raise Unauthorized("Unauthorized: this request was not authenticated")
    fixed = state_of(ctx).caller
    if fixed is None:
        raise Unauthorized("Unauthorized: no tenant for this connection")
    return fixed


async def admit_heavy(ctx: McpContext, caller: Caller) -> None:
    """Spends one unit of the caller's heavy budget (searches, answers, new documents), as the API's heavy
    routes do; a refusal (429) says when to retry."""
    if caller.budget_owner is None:
        return
    refused = await spend_heavy(state_of(ctx).services, caller.budget_owner)
    if refused is not None:
        wait = max(1, int(refused.retry_after + 0.999))
        raise AppError(f"Too many requests: this caller's budget is spent, retry after {wait} s", status=429,
                       code=1006)
