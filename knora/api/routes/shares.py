"""Sharing knowledge bases with other tenants (issue 14): ``POST/GET /knowledge-bases/{kb_id}/shares``,
``DELETE /knowledge-bases/{kb_id}/shares/{share_id}`` (admins of the owning tenant; audited) and
``GET /shared-knowledge-bases`` (what other tenants shared with the caller's).

WeKnora shares with organisations (``/organizations/:id/shared-knowledge-bases``); Knora shares with a tenant
directly. A row of ``/shared-knowledge-bases`` is the knowledge base's own fields, as ``/knowledge-bases``
lists them, plus WeKnora's share fields (``share_id``, ``permission``, ``shared_at``, ``org_name``: the
owning tenant's name) and the same knowledge base nested as ``knowledge_base`` (WeKnora's row shape).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import PrincipalDep, ServicesDep
from knora.api.envelope import ok
from knora.api.schemas.auth import ShareRequest
from knora.api.serializers import kb_json
from knora.domain.access import Share
from knora.services.tenants.shares import parse_permission

router = APIRouter(tags=["knowledge-bases"])


def share_json(share: Share) -> dict[str, Any]:
    return {"id": share.id, "knowledge_base_id": share.resource_id, "tenant_id": share.tenant_id,
            "owner_tenant_id": share.owner_tenant_id, "permission": share.permission.value,
            "created_by": share.created_by, "created_at": share.created_at.isoformat()}


@router.post("/knowledge-bases/{kb_id}/shares", openapi_extra=request_body(ShareRequest))
async def share_kb(kb_id: str, request: Request, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    body = await read_body(request, ShareRequest)
    share = await s.shares.share_kb(principal, kb_id, body.tenant_id, parse_permission(body.permission))
    return ok(share_json(share), status=201)


@router.get("/knowledge-bases/{kb_id}/shares")
async def list_kb_shares(kb_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    found = await s.shares.kb_shares(principal.tenant_id, kb_id)
    return ok({"shares": [share_json(x) for x in found], "total": len(found)})


@router.delete("/knowledge-bases/{kb_id}/shares/{share_id}")
async def revoke_share(kb_id: str, share_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """The receiving tenant loses access at once (shares are never cached)."""
    await s.shares.revoke(principal.tenant_id, kb_id, share_id)
    return JSONResponse({"success": True, "message": "Share removed"})


@router.get("/shared-knowledge-bases")
async def list_shared(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    rows = []
    owners: dict[int, str] = {}
    for share, kb in await s.shares.received(principal.tenant_id):
        if share.owner_tenant_id not in owners:
            owner = await s.tenants.get(share.owner_tenant_id)
            owners[share.owner_tenant_id] = owner.name if owner else ""
        kb_body = kb_json(kb)
        rows.append({**kb_body, "knowledge_base": kb_body, "share_id": share.id,
                     "permission": share.permission.value, "shared_at": share.created_at.isoformat(),
                     "org_name": owners[share.owner_tenant_id], "organization_id": "",
                     "owner_tenant_id": share.owner_tenant_id})
    return ok(rows)
