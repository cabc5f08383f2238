"""Tenants, members, invitations, API keys and the audit log (issue 14), on WeKnora's routes
(``internal/router/routes_auth_tenant.go``) and shapes (``frontend/src/api/tenant``).

Who may call what is ``knora.api.policy``: members and invitations are listed by any member and changed by
admins, keys and the audit log are an admin's, only an owner deletes the tenant. A ``{tenant_id}`` in the path
must be the caller's tenant (the active one, chosen with ``X-Tenant-ID``); another answers 404.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import PrincipalDep, ServicesDep
from knora.api.envelope import ok
from knora.api.routes.accounts import tenant_json
from knora.api.schemas.auth import ApiKeyRequest, MemberRequest, RoleRequest, TenantRequest
from knora.domain.access import ApiKey, Invitation, Member, Principal, Role, parse_role
from knora.domain.errors import BadRequest, Forbidden, NotFound, ValidationFailed
from knora.services.tenants.members import page_window

router = APIRouter(tags=["tenants"])


def _role(value: object, default: Role | None = None) -> Role:
    role = parse_role(value) if value not in (None, "") else default
    if role is None:
        raise ValidationFailed("role: one of owner, admin, contributor, viewer")
    return role


def member_json(m: Member) -> dict[str, Any]:
    return {
        "user_id": m.user_id,
        "email": m.email,
        "username": m.username,
        "avatar": "",
        "role": m.role.value,
        "status": "active",
        "invited_by": m.invited_by,
        "joined_at": m.joined_at.isoformat(),
    }


def invitation_json(i: Invitation) -> dict[str, Any]:
    return {
        "id": i.id,
        "tenant_id": i.tenant_id,
        "tenant_name": i.tenant_name,
        "email": i.email,
        "role": i.role.value,
        "status": i.status,
        "invited_by": i.invited_by,
        "created_at": i.created_at.isoformat(),
        "expires_at": i.expires_at.isoformat() if i.expires_at else None,
    }


def key_json(k: ApiKey) -> dict[str, Any]:
    """A key as listed: its prefix (``api_key``, WeKnora's field), never the key."""
    return {
        "id": k.id,
        "scope_type": "tenant",
        "name": k.name,
        "api_key": f"{k.prefix}…" if k.prefix else "",
        "role": k.role.value,
        "full_access": k.role is not Role.VIEWER,
        "read_only": k.role is Role.VIEWER,
        "knowledge_base_ids": [],
        "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
        "expires_at": k.expires_at.isoformat() if k.expires_at else None,
        "created_by": k.created_by,
        "created_at": k.created_at.isoformat(),
    }


# --- tenants ---------------------------------------------------------------------------------------------
@router.get("/tenants")
async def list_tenants(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """The caller's tenants: a user's memberships (with the role in each), a key's own tenant."""
    if principal.user_id is not None:
        members = await s.accounts.memberships(principal.user_id)
        roles = {m.tenant_id: m.role for m in members}
        tenants = await s.tenants.tenants(list(roles))
    else:
        roles = {principal.tenant_id: principal.role}
        tenants = await s.tenants.tenants([principal.tenant_id])
    items = [{**await tenant_json(s, t), "role": roles[t.id].value} for t in tenants]
    return ok({"items": items, "total": len(items)})


@router.post("/tenants", openapi_extra=request_body(TenantRequest))
async def create_tenant(request: Request, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """A new tenant owned by the signed-in caller (an API key belongs to one tenant and cannot)."""
    if principal.user_id is None:
        raise Forbidden("An API key cannot create tenants: sign in as a user")
    body = await read_body(request, TenantRequest)
    tenant = await s.members.create_tenant(principal.user_id, body.name or "", body.description or "")
    return ok({**await tenant_json(s, tenant), "role": Role.OWNER.value}, status=201)


@router.get("/tenants/{tenant_id}")
async def get_tenant(tenant_id: int, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    tenant = await s.tenants.get(principal.tenant_id)
    if tenant is None:
        raise NotFound("No such tenant")
    return ok({**await tenant_json(s, tenant), "role": principal.role.value})


@router.put("/tenants/{tenant_id}", openapi_extra=request_body(TenantRequest))
async def update_tenant(
    tenant_id: int, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    body = await read_body(request, TenantRequest)
    tenant = await s.tenants.update(principal.tenant_id, body.name, body.description)
    return ok(await tenant_json(s, tenant))


@router.delete("/tenants/{tenant_id}")
async def delete_tenant(tenant_id: int, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """Deletes the tenant with everything in it: its knowledge bases (documents, chunks, originals and
    indexes, through their service), sessions, models, agents, keys and members. The audit log stays."""
    if principal.tenant_id == s.default_tenant_id:
        raise Forbidden("The default tenant cannot be deleted (the server's own key and UI use it)")
    for kb in await s.kb_service.list(principal.tenant_id):
        await s.kb_service.delete(principal.tenant_id, kb.id)
    await s.tenants.delete_rows(principal.tenant_id)
    return ok({"deleted": True})


# --- members ---------------------------------------------------------------------------------------------
@router.get("/tenants/{tenant_id}/members")
async def list_members(
    tenant_id: int, s: ServicesDep, principal: PrincipalDep, page: int = 1, page_size: int = 20, q: str = ""
) -> JSONResponse:
    """A page of the members (``page`` from 1, ``page_size`` up to 100; ``q`` matches name or e-mail) and
    ``total``; the answer names the page and page size it served."""
    page, page_size = page_window(page, page_size)
    members, total = await s.members.members(principal.tenant_id, q, page, page_size)
    return ok(
        {"members": [member_json(m) for m in members], "total": total, "page": page, "page_size": page_size}
    )


@router.post("/tenants/{tenant_id}/members", openapi_extra=request_body(MemberRequest))
async def add_member(
    tenant_id: int, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    body = await read_body(request, MemberRequest)
    member = await s.members.add(principal, body.email, _role(body.role, Role.VIEWER))
    return ok(member_json(member), status=201)


@router.put("/tenants/{tenant_id}/members/{user_id}", openapi_extra=request_body(RoleRequest))
async def update_member(
    tenant_id: int, user_id: str, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    body = await read_body(request, RoleRequest)
    member = await s.members.set_role(principal, user_id, _role(body.role))
    return ok(member_json(member))


@router.delete("/tenants/{tenant_id}/members/{user_id}")
async def remove_member(
    tenant_id: int, user_id: str, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    await s.members.remove(principal, user_id)
    return JSONResponse({"success": True, "message": "Member removed"})


@router.post("/tenants/{tenant_id}/leave")
async def leave_tenant(tenant_id: int, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    await s.members.leave(principal)
    return JSONResponse({"success": True, "message": "You left the tenant"})


# --- invitations -------------------------------------------------------------------------------------------
@router.get("/tenants/{tenant_id}/invitations")
async def list_invitations(tenant_id: int, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    found = await s.members.tenant_invitations(principal.tenant_id)
    return ok({"invitations": [invitation_json(i) for i in found], "total": len(found)})


@router.post("/tenants/{tenant_id}/invitations", openapi_extra=request_body(MemberRequest))
async def create_invitation(
    tenant_id: int, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    """Invites an e-mail with a role: the user with that e-mail (who may register for it) accepts it under
    ``/me/invitations``."""
    body = await read_body(request, MemberRequest)
    invitation = await s.members.invite(principal, body.email, _role(body.role, Role.VIEWER))
    return ok(invitation_json(invitation), status=201)


@router.delete("/tenants/{tenant_id}/invitations/{invitation_id}")
async def revoke_invitation(
    tenant_id: int, invitation_id: str, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    await s.members.revoke_invitation(principal.tenant_id, invitation_id)
    return JSONResponse({"success": True, "message": "Invitation revoked"})


@router.get("/me/invitations")
async def my_invitations(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    found = await _mine(s, principal.user_id)
    return ok({"invitations": [invitation_json(i) for i in found], "total": len(found)})


@router.get("/me/invitations/pending-count")
async def my_pending_count(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return ok({"pending_count": len(await _mine(s, principal.user_id))})


async def _mine(s: ServicesDep, user_id: str | None) -> list[Invitation]:
    if user_id is None:
        return []  # an API key has no e-mail to be invited with
    user = await s.accounts.user(user_id)
    return await s.members.my_invitations(user.email, user.id) if user else []


@router.post("/me/invitations/{invitation_id}/accept")
async def accept_invitation(invitation_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return await _answer(s, principal, invitation_id, accept=True)


@router.post("/me/invitations/{invitation_id}/decline")
async def decline_invitation(invitation_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return await _answer(s, principal, invitation_id, accept=False)


async def _answer(s: ServicesDep, principal: Principal, invitation_id: str, *, accept: bool) -> JSONResponse:
    if principal.user_id is None:
        raise BadRequest("Sign in as the invited user to answer an invitation")
    return ok(invitation_json(await s.members.answer(principal.user_id, invitation_id, accept=accept)))


# --- API keys ----------------------------------------------------------------------------------------------
@router.get("/tenants/{tenant_id}/api-keys")
async def list_keys(tenant_id: int, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return ok([key_json(k) for k in await s.tenants.list_keys(principal.tenant_id)])


@router.post("/tenants/{tenant_id}/api-keys", openapi_extra=request_body(ApiKeyRequest))
async def create_key(
    tenant_id: int, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    """A new key, shown once (``token``). Its role: ``role``, else viewer when ``read_only`` (or WeKnora's
    ``full_access: false``), else admin — never above the caller's."""
    body = await read_body(request, ApiKeyRequest)
    if body.role:
        role = _role(body.role)
    elif body.read_only or body.full_access is False:
        role = Role.VIEWER
    else:
        role = Role.ADMIN if principal.role.covers(Role.ADMIN) else principal.role
    expires = None
    if body.expires_at_unix is not None:
        if body.expires_at_unix <= 0 or body.expires_at_unix > 32503680000:
            raise ValidationFailed("expires_at_unix: Unix seconds in the future")
        expires = datetime.fromtimestamp(body.expires_at_unix, UTC)
    created, key = await s.tenants.create_key(
        principal.tenant_id,
        body.name,
        role,
        expires_at=expires,
        created_by=principal.actor,
        by_role=principal.role,
    )
    return ok({**key_json(created), "token": key}, status=201)


@router.put("/tenants/{tenant_id}/api-keys/{key_id}", openapi_extra=request_body(ApiKeyRequest))
async def rename_key(
    tenant_id: int, key_id: str, request: Request, s: ServicesDep, principal: PrincipalDep
) -> JSONResponse:
    body = await read_body(request, ApiKeyRequest)
    return ok(key_json(await s.tenants.rename_key(principal.tenant_id, key_id, body.name)))


@router.delete("/tenants/{tenant_id}/api-keys/{key_id}")
async def revoke_key(tenant_id: int, key_id: str, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """The key stops working here at once and on every other replica within a second."""
    await s.tenants.revoke_key(principal.tenant_id, key_id)
    return JSONResponse({"success": True, "message": "API key revoked"})


# --- the audit log ---------------------------------------------------------------------------------------
@router.get("/tenants/{tenant_id}/audit-log")
async def audit_log(
    tenant_id: int,
    s: ServicesDep,
    principal: PrincipalDep,
    before_id: int | None = None,
    limit: int = 50,
    action: str = "",
) -> JSONResponse:
    entries = await s.audit.entries(
        principal.tenant_id, before_id=before_id, limit=limit, action=action or None
    )
    items = [
        {
            "id": e.id,
            "actor": e.actor,
            "action": e.action,
            "target": e.target,
            "status": e.status,
            "ip": e.ip,
            "detail": e.detail,
            "created_at": e.created_at.isoformat(),
        }
        for e in entries
    ]
    return ok({"items": items, "next_before_id": items[-1]["id"] if len(items) == limit else None})
