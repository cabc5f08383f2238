"""Writes the audit log: after a request to an audited route (``knora.api.policy``: admin actions and every
deletion) succeeded, who did it, what, to which ids, from where. Written once the answer is sent, so the log
costs the caller nothing; a request that failed changed nothing and is not logged."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knora.api.policy import requirement
from knora.domain.access import AuditEntry, Principal
from knora.root import Services

PRINCIPAL = "principal"  # where the authentication dependency leaves the caller on the request's state


class AuditMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        await self.app(scope, receive, sending)
        principal = scope.get("state", {}).get(PRINCIPAL)
        route = scope.get("route")
        template = getattr(route, "path_format", None)
        if not isinstance(principal, Principal) or template is None or not 200 <= status < 400:
            return
        if not requirement(scope["method"], template).audited:
            return
        for prefix in ("/api/v1", "/v1"):  # the route's own template lacks its router's prefix
            if scope["path"].startswith(prefix + "/") and not template.startswith(prefix + "/"):
                template = prefix + template
                break
        services: Services = scope["app"].state.services
        params = scope.get("path_params", {})
        client = scope.get("client")
        await services.audit.record(AuditEntry(
            tenant_id=principal.tenant_id, actor=principal.actor, action=f"{scope['method']} {template}",
            target=", ".join(f"{k}={v}" for k, v in params.items()), status=status,
            ip=client[0] if client else ""))
