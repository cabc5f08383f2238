"""System info, capabilities, and the small auth surface WeKnora's web UI needs to log in (api §1.5, §6(c)).

Knora has tenants with API keys, not users with passwords. ``POST /auth/auto-setup`` (WeKnora Lite's silent
login) hands a key of the default tenant as its ``token`` to Knora's own UI on this machine only (a
same-origin JSON request from a loopback client naming a loopback host; see ``knora.api.same_origin``); the
UI then sends it as a bearer token, which authenticates like ``X-API-Key``. Other clients and other origins
must be given a key by the operator.

Error shapes: every error here is the envelope (``{"success": false, "error": {"code", "message"}}``). The
one WeKnora shape kept is a failed login: WeKnora's web UI reads the top-level ``success`` and ``message`` of
the 401 to show "invalid credentials", so that answer carries both — WeKnora's ``message`` next to the
envelope's ``error`` (as a duplicate upload's 409 does in ``knora.api.routes.knowledge``). Successful
auto-setup, login and refresh answers are WeKnora's shapes (``token``, ``user``… at the top level, no
``data``), which the UI reads as they are.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora import __version__
from knora.api.body import read_object, request_body
from knora.api.deps import DefaultTenantDep, IngestServiceDep, SettingsDep, TenantDep, TenantsDep
from knora.api.envelope import ok
from knora.api.same_origin import auto_setup_refusal
from knora.api.schemas.auth import LoginRequest, RefreshRequest
from knora.domain.errors import Forbidden, NotFound, Unauthorized
from knora.services.ingest.quota import StorageUsage
from knora.services.ingest.service import IngestService
from knora.services.tenants.service import TenantService

router = APIRouter(tags=["system"])

# Every key of WeKnora's DeploymentCapabilityKeys is answered: the UI shows a menu whose key is missing. A
# feature is "supported" only when its routes answer for real (``settings.websearch``:
# knora.api.routes.web_search); the unsupported ones answer their reads empty (knora.api.routes.unsupported).
_UNSUPPORTED = ("organizations", "integrations.im", "integrations.embed", "settings.vectorstore",
                "settings.sandbox", "settings.sandbox.docker", "sandbox.workbench")
_SUPPORTED = ("agents", "integrations.api", "settings.mcp", "settings.websearch",
              "settings.storage")  # one backend, KNORA_BLOB_STORE's (knora.api.routes.storage)


def _user(tenant_id: int, tenant_name: str, storage: StorageUsage
          ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    user = {"id": f"system-{tenant_id}", "username": "knora", "email": "knora@localhost",
            "tenant_id": tenant_id,
            "avatar": "", "is_active": True, "can_access_all_tenants": False}
    # WeKnora's tenant fields: bytes of stored originals, and the quota (0 = unlimited)
    tenant = {"id": tenant_id, "name": tenant_name, "storage_quota": storage.quota,
              "storage_used": storage.used}
    memberships = [{"tenant_id": tenant_id, "tenant_name": tenant_name, "role": "owner"}]
    return user, tenant, memberships


@router.get("/system/info")
async def system_info(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    engine = settings.effective_retrieval_engine
    return ok({"version": __version__, "edition": "knora", "commit_id": "", "build_time": "",
               "go_version": "",
               "keyword_index_engine": engine, "vector_store_engine": engine, "graph_database_engine": "",
               # WeKnora: a self-hosted S3-compatible object store (its "minio") is configured
               "minio_enabled": settings.blob_store == "s3" and bool(settings.s3_endpoint_url),
               "db_version": "sqlite" if settings.is_sqlite else "postgres",
               "embedder": settings.embedder, "job_queue": settings.job_queue,
               "blob_store": settings.blob_store})


@router.get("/system/capabilities")
async def system_capabilities(_tenant_id: TenantDep) -> JSONResponse:
    caps = {k: {"supported": False, "reason": "not available in Knora"} for k in _UNSUPPORTED}
    caps.update({k: {"supported": True} for k in _SUPPORTED})
    return ok({"edition": "lite", "capabilities": caps})


async def _login_body(tenants: TenantService, ingest: IngestService, tenant_id: int, token: str
                      ) -> dict[str, Any]:
    t = await tenants.get(tenant_id)
    usage = await ingest.quota.usage(tenant_id)
    user, tenant, memberships = _user(tenant_id, t.name if t else "default", usage)
    return {"success": True, "message": "Login successful", "user": user, "tenant": tenant,
            "active_tenant": tenant,
            "memberships": memberships, "token": token, "refresh_token": token}


@router.post("/auth/auto-setup")
async def auto_setup(request: Request, settings: SettingsDep, tenants: TenantsDep, ingest: IngestServiceDep,
                     default_tenant_id: DefaultTenantDep) -> JSONResponse:
    """A key of the default tenant for Knora's own UI on this machine, refused to anything else (why:
    ``knora.api.same_origin``)."""
    refusal = auto_setup_refusal(request.headers, request.url.scheme,
                                 request.client.host if request.client else "")
    if refusal is not None:
        raise Forbidden(refusal)
    token = await tenants.ui_key(settings.api_key)
    return JSONResponse(await _login_body(tenants, ingest, default_tenant_id, token))


_BAD_LOGIN = "Invalid credentials: use an API key as the password"


@router.post("/auth/login", openapi_extra=request_body(LoginRequest))
async def login(request: Request, tenants: TenantsDep, ingest: IngestServiceDep) -> JSONResponse:
    """Knora has no user passwords: the login page's password field takes a tenant API key (any email)."""
    password = (await read_object(request)).get("password")
    tenant_id = await tenants.authenticate(password) if isinstance(password, str) and password else None
    if tenant_id is None or not isinstance(password, str):
        # WeKnora's UI reads success/message; ``error`` makes the same body the envelope (module docstring).
        return JSONResponse({"success": False, "message": _BAD_LOGIN,
                             "error": {"code": Unauthorized.code, "message": _BAD_LOGIN}}, status_code=401)
    return JSONResponse(await _login_body(tenants, ingest, tenant_id, password))


@router.post("/auth/refresh", openapi_extra=request_body(RefreshRequest))
async def refresh(request: Request, tenants: TenantsDep) -> JSONResponse:
    body = await read_object(request)
    token = body.get("refreshToken") or body.get("refresh_token")
    if not isinstance(token, str) or await tenants.authenticate(token) is None:
        raise Unauthorized("Unauthorized: invalid or expired token")
    return JSONResponse({"success": True, "message": "Token refreshed", "access_token": token,
                         "refresh_token": token})


@router.get("/auth/config")
async def auth_config() -> JSONResponse:
    return JSONResponse({"success": True, "registration_mode": "invite_only"})


@router.get("/auth/me")
async def auth_me(tenants: TenantsDep, ingest: IngestServiceDep, tenant_id: TenantDep) -> JSONResponse:
    t = await tenants.get(tenant_id)
    usage = await ingest.quota.usage(tenant_id)
    user, tenant, memberships = _user(tenant_id, t.name if t else "default", usage)
    return ok({"user": user, "tenant": tenant, "memberships": memberships, "tenant_required": False,
               "capabilities": {"can_create_tenant": False, "auto_accept_invitation": False}})


@router.get("/tenants/kv/{key}")
async def tenant_kv(key: str, tenants: TenantsDep, tenant_id: TenantDep) -> JSONResponse:
    t = await tenants.get(tenant_id)
    if key == "retrieval-config":
        return ok(t.retrieval_config if t else {})
    if key in ("web-search-config", "prompt-templates"):
        return ok({})
    raise NotFound(f"Unknown setting {key!r}")
