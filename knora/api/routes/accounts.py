"""``/auth/*``: register, login, refresh, logout, me, change password, and WeKnora Lite's silent login for
Knora's own UI on this machine (api §1.5, issue 14).

Response shapes are WeKnora's (``frontend/src/api/auth``): login and refresh answer at the top level
(``success``, ``user``, ``tenant``, ``token``, ``refresh_token`` — ``access_token`` on refresh), ``me`` in the
envelope's ``data``. A failed login is 401 with WeKnora's top-level ``message`` (the UI shows it) next to the
envelope's ``error``, one message for an unknown user and a wrong password; too many failures answer 429 with
``Retry-After``.

``POST /auth/auto-setup`` hands the default tenant's UI key (an owner's) to Knora's own UI on this machine
only: a same-origin JSON request from a loopback client naming a loopback host (``knora.api.same_origin``).
Any other client signs in with a password, or calls the API with a key.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import DefaultTenantDep, PrincipalDep, ServicesDep, SettingsDep, TenantsDep
from knora.api.envelope import ok
from knora.api.same_origin import auto_setup_refusal
from knora.api.schemas.auth import ChangePasswordRequest, LoginRequest, RefreshRequest, RegisterRequest
from knora.domain.access import Member, Principal, Role, User
from knora.domain.errors import Forbidden, Unauthorized
from knora.domain.models import Tenant
from knora.root import Services

router = APIRouter(tags=["auth"])


def user_json(user: User, tenant_id: int | None) -> dict[str, Any]:
    return {
        "id": user.id,
        "username": user.username,
        "email": user.email,
        "avatar": "",
        "tenant_id": tenant_id,
        "is_active": user.is_active,
        "can_access_all_tenants": False,
        "created_at": user.created_at.isoformat(),
        "updated_at": user.updated_at.isoformat(),
    }


def _key_user(p: Principal) -> dict[str, Any]:
    """What ``me`` says of an API key: a key is not a user; WeKnora's UI still needs a user object."""
    return {
        "id": f"key-{p.key_id}",
        "username": f"API key {p.key_prefix}…" if p.key_prefix else "API key",
        "email": "",
        "avatar": "",
        "tenant_id": p.tenant_id,
        "is_active": True,
        "can_access_all_tenants": False,
    }


async def tenant_json(s: Services, tenant: Tenant) -> dict[str, Any]:
    usage = await s.ingest_service.quota.usage(tenant.id)
    return {
        "id": tenant.id,
        "name": tenant.name,
        "description": tenant.description,
        "status": "active",
        "business": "",
        "storage_quota": usage.quota,
        "storage_used": usage.used,
        "created_at": tenant.created_at.isoformat(),
        "updated_at": tenant.updated_at.isoformat(),
    }


def memberships_json(members: list[Member]) -> list[dict[str, Any]]:
    return [{"tenant_id": m.tenant_id, "tenant_name": m.tenant_name, "role": m.role.value} for m in members]


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def _login_answer(
    s: Services,
    user: dict[str, Any],
    tenant_id: int | None,
    members: list[dict[str, Any]],
    token: str,
    refresh: str,
) -> JSONResponse:
    tenant = await s.tenants.get(tenant_id) if tenant_id is not None else None
    tenant_body = await tenant_json(s, tenant) if tenant else None
    return JSONResponse(
        {
            "success": True,
            "message": "Login successful",
            "user": user,
            "tenant": tenant_body,
            "active_tenant": tenant_body,
            "memberships": members,
            "token": token,
            "refresh_token": refresh,
        }
    )


@router.post("/auth/auto-setup")
async def auto_setup(
    request: Request,
    s: ServicesDep,
    settings: SettingsDep,
    tenants: TenantsDep,
    default_tenant_id: DefaultTenantDep,
) -> JSONResponse:
    """The default tenant's UI key for Knora's own UI on this machine, refused to anything else."""
    refusal = auto_setup_refusal(
        request.headers, request.url.scheme, request.client.host if request.client else ""
    )
    if refusal is not None:
        raise Forbidden(refusal)
    token = await tenants.ui_key(settings.api_key)
    grant = await tenants.grant(token)
    principal = tenants.key_principal(grant) if grant else Principal(default_tenant_id, Role.OWNER)
    members = [{"tenant_id": default_tenant_id, "tenant_name": "", "role": principal.role.value}]
    tenant = await tenants.get(default_tenant_id)
    if tenant is not None:
        members[0]["tenant_name"] = tenant.name
    return await _login_answer(s, _key_user(principal), default_tenant_id, members, token, token)


@router.post("/auth/login", openapi_extra=request_body(LoginRequest))
async def login(request: Request, s: ServicesDep) -> JSONResponse:
    """Username or e-mail, and password."""
    body = await read_body(request, LoginRequest)
    name = body.email.strip() or body.username.strip()
    password = body.password
    try:
        done = await s.accounts.login(name, password, _client(request))
    except Unauthorized as exc:
        # WeKnora's UI reads success/message; ``error`` makes the same body the envelope
        return JSONResponse(
            {"success": False, "message": exc.message, "error": {"code": exc.code, "message": exc.message}},
            status_code=401,
        )
    return await _login_answer(
        s,
        user_json(done.user, done.tenant_id),
        done.tenant_id,
        memberships_json(done.memberships),
        done.tokens.access_token,
        done.tokens.refresh_token,
    )


@router.post("/auth/register", openapi_extra=request_body(RegisterRequest))
async def register(request: Request, s: ServicesDep) -> JSONResponse:
    """A new account. ``KNORA_REGISTRATION``: ``open`` (anyone; the user gets a tenant of their own),
    ``invite`` (the default: only an e-mail with an open invitation, which joins the inviting tenant on
    acceptance), ``closed`` (accounts are made with ``knora user create``)."""
    body = await read_body(request, RegisterRequest)
    email, mode = body.email.strip(), s.settings.registration
    invited = await s.members.invited(email) if email else False
    if mode == "closed" or (mode == "invite" and not invited):
        raise Forbidden("Registration is closed: ask an admin of your team for an invitation")
    user = await s.accounts.register(body.username, email, body.password)
    tenant = None
    if not invited:
        tenant = await s.members.create_tenant(user.id, f"{user.username}'s space")
    return JSONResponse(
        {
            "success": True,
            "message": "Registration successful",
            "data": {
                "user": {"id": user.id, "username": user.username, "email": user.email},
                "tenant": {"id": tenant.id, "name": tenant.name} if tenant else None,
            },
        },
        status_code=201,
    )


@router.post("/auth/refresh", openapi_extra=request_body(RefreshRequest))
async def refresh(request: Request, s: ServicesDep) -> JSONResponse:
    body = await read_body(request, RefreshRequest)
    token = body.refreshToken.strip() or body.refresh_token.strip()
    if await s.tenants.grant(token) is not None:  # auto-setup's UI key stands for both tokens: it stays
        return JSONResponse({"success": True, "message": "Token refreshed", "access_token": token,
                             "refresh_token": token})
    tokens = await s.accounts.refresh(token)
    return JSONResponse(
        {
            "success": True,
            "message": "Token refreshed",
            "access_token": tokens.access_token,
            "refresh_token": tokens.refresh_token,
            "expires_in": tokens.expires_in,
        }
    )


@router.get("/auth/config")
async def auth_config(settings: SettingsDep) -> JSONResponse:
    mode = {"open": "open", "invite": "invite_only", "closed": "closed"}[settings.registration]
    return JSONResponse({"success": True, "registration_mode": mode})


@router.post("/auth/logout")
async def logout(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """Ends the login session of a signed-in user (its tokens stop working on every replica within a
    second). An API key stays valid: revoke it through ``/tenants/{id}/api-keys``."""
    await s.accounts.logout(principal)
    return JSONResponse({"success": True, "message": "Logout successful"})


@router.get("/auth/validate")
async def validate(_principal: PrincipalDep) -> JSONResponse:
    return JSONResponse({"success": True, "valid": True, "message": "Token is valid"})


@router.post("/auth/change-password", openapi_extra=request_body(ChangePasswordRequest))
async def change_password(request: Request, s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    """Every other login session of the user ends."""
    body = await read_body(request, ChangePasswordRequest)
    old = body.old_password or body.current_password
    await s.accounts.change_password(principal, old, body.new_password)
    return ok({"changed": True})


@router.get("/auth/me")
async def auth_me(s: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    if principal.user_id is not None:
        user = await s.accounts.user(principal.user_id)
        if user is None:
            raise Unauthorized("Unauthorized: invalid or expired token")
        members = await s.accounts.memberships(principal.user_id)
        user_body = user_json(user, principal.tenant_id if principal.in_tenant else None)
    else:
        members = []
        user_body = _key_user(principal)
    tenant = await s.tenants.get(principal.tenant_id) if principal.in_tenant else None
    memberships = (
        memberships_json(members)
        if principal.user_id is not None
        else [
            {
                "tenant_id": principal.tenant_id,
                "tenant_name": tenant.name if tenant else "",
                "role": principal.role.value,
            }
        ]
    )
    return ok(
        {
            "user": user_body,
            "tenant": await tenant_json(s, tenant) if tenant else None,
            "memberships": memberships,
            "role": principal.role.value if principal.in_tenant else None,
            "tenant_required": not principal.in_tenant,
            "capabilities": {
                "can_create_tenant": principal.user_id is not None,
                "auto_accept_invitation": False,
            },
        }
    )
