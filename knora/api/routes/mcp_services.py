"""MCP services (api §1.5 "MCP services"): CRUD, connection test, tool listing, per-tool approval flags.

Secrets in ``auth_config`` are write-only: responses say whether each is set, and a masked value sent back on
update keeps the stored one.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse

from knora.adapters.db.repos.mcp_services import SqlMCPServiceRepo
from knora.api.body import as_object
from knora.api.deps import MCPServiceRepoDep, MCPToolsetDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.domain.errors import BadRequest, NotFound, Unavailable
from knora.domain.mcp import TRANSPORTS, MCPService

router = APIRouter(tags=["mcp-services"])
JsonBody = Body(default_factory=dict)
MASK = "******"
_FIELDS = ("name", "description", "transport_type", "url", "headers", "auth_config", "advanced_config",
           "stdio_config", "env_vars", "enabled")


def service_json(s: MCPService) -> dict[str, Any]:
    out = s.model_dump(mode="json")
    out["auth_config"] = {k: MASK for k, v in (s.auth_config or {}).items() if v}
    out["env_vars"] = {k: MASK for k in (s.env_vars or {})}
    return out


_body = as_object


def _check(values: dict[str, Any], stdio_enabled: bool) -> None:
    transport = str(values.get("transport_type") or "sse")
    if transport not in TRANSPORTS and transport not in ("streamable-http", "http"):
        raise BadRequest(f"transport_type must be one of {', '.join(TRANSPORTS)}")
    if transport == "stdio":
        if not stdio_enabled:
            raise BadRequest("stdio MCP services are disabled on this server")
        if not (values.get("stdio_config") or {}).get("command"):
            raise BadRequest("stdio_config.command is required for stdio services")
    elif not str(values.get("url") or "").startswith(("http://", "https://")):
        raise BadRequest("url (http or https) is required")
    for key in ("headers", "auth_config", "advanced_config", "stdio_config", "env_vars"):
        if values.get(key) is not None and not isinstance(values[key], dict):
            raise BadRequest(f"{key} must be a JSON object")


async def _get(repo: SqlMCPServiceRepo, tenant_id: int, service_id: str) -> MCPService:
    s = await repo.get(tenant_id, service_id)
    if s is None:
        raise NotFound("MCP service not found")
    return s


@router.get("/mcp-services")
async def list_services(mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    return ok([service_json(s) for s in await mcp_service_repo.list(tenant_id)])


@router.post("/mcp-services", status_code=201)
async def create_service(settings: SettingsDep, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep, body: Any = JsonBody) -> JSONResponse:
    b = _body(body)
    if not str(b.get("name") or "").strip():
        raise BadRequest("name is required")
    _check(b, settings.mcp_stdio_enabled)
    values = {k: b[k] for k in _FIELDS if b.get(k) is not None}
    created = await mcp_service_repo.create(MCPService(tenant_id=tenant_id, **values))
    return ok(service_json(created), status=201)


@router.get("/mcp-services/{service_id}")
async def get_service(service_id: str, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(service_json(await _get(mcp_service_repo, tenant_id, service_id)))


@router.put("/mcp-services/{service_id}")
async def update_service(service_id: str, settings: SettingsDep, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep,
                         body: Any = JsonBody) -> JSONResponse:
    current = await _get(mcp_service_repo, tenant_id, service_id)
    b = _body(body)
    values = current.model_dump()
    for key in _FIELDS:
        if b.get(key) is None:
            continue
        if key in ("auth_config", "env_vars") and isinstance(b[key], dict):
            old = values.get(key) or {}
            values[key] = {k: (old.get(k, "") if v == MASK else v) for k, v in b[key].items()}
        else:
            values[key] = b[key]
    _check(values, settings.mcp_stdio_enabled)
    updated = await mcp_service_repo.update(MCPService.model_validate(values))
    return ok(service_json(updated))


@router.delete("/mcp-services/{service_id}")
async def delete_service(service_id: str, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    if not await mcp_service_repo.delete(tenant_id, service_id):
        raise NotFound("MCP service not found")
    return ok(message="MCP service deleted successfully")


@router.post("/mcp-services/{service_id}/test")
async def test_service(service_id: str, mcp_toolset: MCPToolsetDep, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    reachable, message, tools = await mcp_toolset.probe(await _get(mcp_service_repo, tenant_id, service_id))
    return ok({"success": reachable, "message": message, "tools": tools})


@router.get("/mcp-services/{service_id}/tools")
async def list_tools(service_id: str, mcp_toolset: MCPToolsetDep, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    reachable, message, tools = await mcp_toolset.probe(await _get(mcp_service_repo, tenant_id, service_id))
    if not reachable:
        raise Unavailable(message)
    return ok(tools)


@router.get("/mcp-services/{service_id}/resources")
async def list_resources(service_id: str, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    await _get(mcp_service_repo, tenant_id, service_id)
    return ok([])


@router.get("/mcp-services/{service_id}/tool-approvals")
async def get_approvals(service_id: str, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep) -> JSONResponse:
    service = await _get(mcp_service_repo, tenant_id, service_id)
    return ok([{"tool_name": k, "require_approval": bool(v)} for k, v in (service.tool_approvals or {}).items()])


@router.put("/mcp-services/{service_id}/tool-approvals/{tool}")
async def set_approval(service_id: str, tool: str, mcp_service_repo: MCPServiceRepoDep, tenant_id: TenantDep,
                       body: Any = JsonBody) -> JSONResponse:
    service = await _get(mcp_service_repo, tenant_id, service_id)
    b = _body(body)
    flag = b.get("require_approval", b.get("requires_approval"))
    if not isinstance(flag, bool):
        raise BadRequest("require_approval (boolean) is required")
    approvals = {**(service.tool_approvals or {}), tool: flag}
    await mcp_service_repo.update(service.model_copy(update={"tool_approvals": approvals}))
    return ok({"tool_name": tool, "require_approval": flag})
