"""MCP service configurations per tenant: validation, secret masking on update, per-tool approval flags.

The API's ``/mcp-services`` routes call this service rather than the repository, so the rules (which
transports, stdio only when the server allows it, a masked secret sent back keeps the stored one) live in one
place. An HTTP service's URL must be one the tenant outbound policy allows (public, or allow-listed by the
operator): a service pointing at loopback, a private range or 169.254.169.254 is refused when it is saved.
"""

from __future__ import annotations

from collections.abc import Mapping

from knora.domain.errors import BadRequest, NotFound
from knora.domain.mcp import TRANSPORTS, MCPService
from knora.netguard import PUBLIC_ONLY, AddressRefused, OutboundPolicy
from knora.ports.agent_store import MCPServiceRepo

MASK = "******"
FIELDS = ("name", "description", "transport_type", "url", "headers", "auth_config", "advanced_config",
          "stdio_config", "env_vars", "enabled")
_OBJECT_FIELDS = ("headers", "auth_config", "advanced_config", "stdio_config", "env_vars")
_SECRET_FIELDS = ("auth_config", "env_vars", "headers")
# Header names whose values are credentials (``Authorization: Bearer …``, ``X-API-Key``, cookies): masked
# in every answer like ``auth_config``, and a masked value sent back keeps the stored one.
_SECRET_HEADER_WORDS = ("auth", "token", "key", "secret", "password", "cookie", "session", "signature")
# The write-only secrets of ``auth_config`` (``/mcp-services/:id/credentials``): what ``auth_headers`` sends.
CREDENTIAL_FIELDS = ("api_key", "token")

Body = Mapping[str, object]


def credentials(service: MCPService) -> dict[str, dict[str, bool]]:
    """Whether each write-only secret is set (WeKnora's ``MCPService.credentials``)."""
    auth = service.auth_config or {}
    return {field: {"configured": bool(auth.get(field))} for field in CREDENTIAL_FIELDS}


def secret_header(name: str) -> bool:
    """A header whose value is a credential, by its name."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_HEADER_WORDS)


def masked(service: MCPService) -> MCPService:
    """The record as clients see it: each set secret replaced by MASK (credential headers included)."""
    return service.model_copy(update={
        "auth_config": {k: MASK for k, v in (service.auth_config or {}).items() if v},
        "env_vars": {k: MASK for k in (service.env_vars or {})},
        "headers": {k: MASK if secret_header(k) and v else v for k, v in (service.headers or {}).items()}})


class MCPServiceService:
    def __init__(self, repo: MCPServiceRepo, *, stdio_enabled: bool,
                 policy: OutboundPolicy = PUBLIC_ONLY) -> None:
        self._repo = repo
        self._stdio_enabled = stdio_enabled
        self._policy = policy

    async def list(self, tenant_id: int) -> list[MCPService]:
        return await self._repo.list(tenant_id)

    async def get(self, tenant_id: int, service_id: str) -> MCPService:
        service = await self._repo.get(tenant_id, service_id)
        if service is None:
            raise NotFound("MCP service not found")
        return service

    async def create(self, tenant_id: int, body: Body) -> MCPService:
        if not str(body.get("name") or "").strip():
            raise BadRequest("name is required")
        self._check(body)
        await self._check_url(body)
        values = {k: body[k] for k in FIELDS if body.get(k) is not None}
        return await self._repo.create(MCPService.model_validate({"tenant_id": tenant_id, **values}))

    async def update(self, tenant_id: int, service_id: str, body: Body) -> MCPService:
        values: dict[str, object] = (await self.get(tenant_id, service_id)).model_dump()
        for key in FIELDS:
            sent = body.get(key)
            if sent is None:
                continue
            old = values.get(key)
            if key in _SECRET_FIELDS and isinstance(sent, dict) and isinstance(old, dict):
                values[key] = {k: (old.get(k, "") if v == MASK else v) for k, v in sent.items()}
            else:
                values[key] = sent
        self._check(values)
        await self._check_url(values)
        return await self._repo.update(MCPService.model_validate(values))

    async def delete(self, tenant_id: int, service_id: str) -> None:
        if not await self._repo.delete(tenant_id, service_id):
            raise NotFound("MCP service not found")

    async def set_credential(self, tenant_id: int, service_id: str, field: str,
                             value: str | None) -> MCPService:
        """Sets (or, with ``None``, clears) one secret of ``auth_config`` without touching the rest."""
        if field not in CREDENTIAL_FIELDS:
            raise NotFound(f"Unknown credential field {field!r}")
        service = await self.get(tenant_id, service_id)
        auth = {k: v for k, v in (service.auth_config or {}).items() if k != field}
        if value is not None:
            auth[field] = value
        return await self._repo.update(service.model_copy(update={"auth_config": auth}))

    async def tool_approvals(self, tenant_id: int, service_id: str) -> dict[str, bool]:
        service = await self.get(tenant_id, service_id)
        return {k: bool(v) for k, v in (service.tool_approvals or {}).items()}

    async def set_tool_approval(self, tenant_id: int, service_id: str, tool: str, flag: bool) -> None:
        service = await self.get(tenant_id, service_id)
        approvals = {**(service.tool_approvals or {}), tool: flag}
        await self._repo.update(service.model_copy(update={"tool_approvals": approvals}))

    async def _check_url(self, values: Body) -> None:
        if str(values.get("transport_type") or "sse") == "stdio":
            return
        try:
            await self._policy.check_url(str(values.get("url") or ""))
        except AddressRefused as exc:
            if exc.code != "dns_error":  # an unresolvable name is checked (and pinned) again at every use
                raise BadRequest(f"url not allowed: {exc}") from exc

    def _check(self, values: Body) -> None:
        transport = str(values.get("transport_type") or "sse")
        if transport not in TRANSPORTS and transport not in ("streamable-http", "http"):
            raise BadRequest(f"transport_type must be one of {', '.join(TRANSPORTS)}")
        if transport == "stdio":
            if not self._stdio_enabled:
                raise BadRequest("stdio MCP services are disabled on this server")
            stdio = values.get("stdio_config")
            if not (isinstance(stdio, dict) and stdio.get("command")):
                raise BadRequest("stdio_config.command is required for stdio services")
        elif not str(values.get("url") or "").startswith(("http://", "https://")):
            raise BadRequest("url (http or https) is required")
        for key in _OBJECT_FIELDS:
            if values.get(key) is not None and not isinstance(values[key], dict):
                raise BadRequest(f"{key} must be a JSON object")
