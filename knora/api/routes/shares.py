"""Sharing knowledge bases and agents with other tenants (issue 14): ``POST/GET
/knowledge-bases/{kb_id}/shares``, ``DELETE /knowledge-bases/{kb_id}/shares/{share_id}`` and the same under
``/agents/{agent_id}/shares`` (admins of the owning tenant; audited); ``GET /shared-knowledge-bases`` and
``GET /shared-agents`` (what other tenants shared with the caller's).

WeKnora shares with organisations (``/organizations/:id/shared-knowledge-bases``); Knora shares with a tenant
directly. A row of ``/shared-knowledge-bases`` is the knowledge base's own fields, as ``/knowledge-bases``
lists them, plus WeKnora's share fields (``share_id``, ``permission``, ``shared_at``, ``org_name``: the
owning tenant's name) and the same knowledge base nested as ``knowledge_base`` (WeKnora's row shape). A row
of ``/shared-agents`` is WeKnora's ``SharedAgentInfo``: the agent nested as ``agent``, the share fields and
``source_tenant_id``; the agent is chatted with by its id, as the tenant's own are.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import PrincipalDep, ServicesDep
from knora.api.envelope import ok
from knora.api.schemas.auth import ShareRequest
from knora.api.serializers import agent_json, kb_json
from knora.domain.access import KB_SHARE, Share
from knora.root import Services
from knora.services.tenants.shares import parse_permission

router = APIRouter(tags=["knowledge-bases"])


def share_json(share: Share) -> dict[str, Any]:
    field = "knowledge_base_id" if share.resource_type == KB_SHARE else "agent_id"
    return {"id": share.id, field: share.resource_id, "tenant_id": share.tenant_id,
            "owner_tenant_id": share.owner_tenant_id, "source_tenant_id": share.owner_tenant_id,
            "permission": share.permission.value, "created_by": share.created_by,
            "created_at": share.created_at.isoformat()}


def _created(share: Share) -> JSONResponse:
    return ok(share_json(share), status=201)


def _listed(found: list[Share]) -> JSONResponse:
    return ok({"shares": [share_json(x) for x in found], "total": len(found)})


def _removed() -> JSONResponse:
    return JSONResponse({"success": True, "message": "Share removed"})


class _TenantNames:
    """Tenant id → name, each read once per request."""

    def __init__(self, s: Services) -> None:
        self._s = s
        self._names: dict[int, str] = {}

    async def name(self, tenant_id: int) -> str:
        if tenant_id not in self._names:
            tenant = await self._s.tenants.get(tenant_id)
            self._names[tenant_id] = tenant.name if tenant else ""
        return self._names[tenant_id]


@router.post("/knowledge-bases/{kb_id}/shares", openapi_extra=request_body(ShareRequest))
async def share_kb(kb_id: str, request: Request, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    body = await read_body(request, ShareRequest)
    permission = parse_permission(body.permission)
    return _created(await s.shares.share_kb(principal, kb_id, body.tenant_id, permission))


@router.get("/knowledge-bases/{kb_id}/shares")
async def list_kb_shares(kb_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return _listed(await s.shares.kb_shares(principal.tenant_id, kb_id))


@router.delete("/knowledge-bases/{kb_id}/shares/{share_id}")
async def revoke_share(kb_id: str, share_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """The receiving tenant loses access at once (shares are never cached)."""
    await s.shares.revoke(principal.tenant_id, kb_id, share_id)
    return _removed()


@router.get("/shared-knowledge-bases")
async def list_shared(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    rows = []
    names = _TenantNames(s)
    for share, kb in await s.shares.received(principal.tenant_id):
        kb_body = kb_json(kb)
        rows.append({**kb_body, "knowledge_base": kb_body, "share_id": share.id,
                     "permission": share.permission.value, "shared_at": share.created_at.isoformat(),
                     "org_name": await names.name(share.owner_tenant_id), "organization_id": "",
                     "owner_tenant_id": share.owner_tenant_id, "source_tenant_id": share.owner_tenant_id})
    return ok(rows)


@router.post("/agents/{agent_id}/shares", openapi_extra=request_body(ShareRequest))
async def share_agent(agent_id: str, request: Request, s: ServicesDep,
                      principal: PrincipalDep) -> JSONResponse:
    """The other tenant may chat with the agent over the knowledge bases it is bound to, on its models."""
    body = await read_body(request, ShareRequest)
    permission = parse_permission(body.permission)
    return _created(await s.shares.share_agent(principal, agent_id, body.tenant_id, permission))


@router.get("/agents/{agent_id}/shares")
async def list_agent_shares(agent_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return _listed(await s.shares.agent_shares(principal.tenant_id, agent_id))


@router.delete("/agents/{agent_id}/shares/{share_id}")
async def revoke_agent_share(agent_id: str, share_id: str, s: ServicesDep,
                             principal: PrincipalDep) -> JSONResponse:
    """The receiving tenant's next turn with the agent runs without it (no agent: its own scope only)."""
    await s.shares.revoke_agent(principal.tenant_id, agent_id, share_id)
    return _removed()


@router.get("/shared-agents")
async def list_shared_agents(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    rows = []
    names = _TenantNames(s)
    for share, agent in await s.shares.received_agents(principal.tenant_id):
        rows.append({"agent": agent_json(agent), "share_id": share.id, "organization_id": "",
                     "org_name": await names.name(share.owner_tenant_id),
                     "permission": share.permission.value, "source_tenant_id": share.owner_tenant_id,
                     "shared_at": share.created_at.isoformat(), "shared_by_user_id": share.created_by or "",
                     "disabled_by_me": False})
    return ok(rows)
