"""MCP services (api §1.5 "MCP services"): CRUD, connection test, tool listing, per-tool approval flags.

Secrets in ``auth_config`` are write-only: responses say whether each is set, and a masked value sent back on
update keeps the stored one (``knora.services.agent.mcp_services``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import MCPServicesDep, MCPToolsetDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Done, Envelope
from knora.api.schemas.mcp_services import (
    MCPServiceOut,
    MCPServiceRequest,
    MCPTestResult,
    ToolApproval,
    ToolApprovalRequest,
)
from knora.domain.errors import BadRequest, Unavailable
from knora.domain.mcp import MCPService
from knora.services.agent.mcp_services import credentials, masked

router = APIRouter(tags=["mcp-services"])


def service_json(s: MCPService) -> dict[str, Any]:
    return {**masked(s).model_dump(mode="json"), "credentials": credentials(s)}


@router.get("/mcp-services", response_model=Envelope[list[MCPServiceOut]])
async def list_services(mcp_services: MCPServicesDep, tenant_id: TenantDep) -> JSONResponse:
    return ok([service_json(s) for s in await mcp_services.list(tenant_id)])


@router.post("/mcp-services", status_code=201, response_model=Envelope[MCPServiceOut],
             openapi_extra=request_body(MCPServiceRequest))
async def create_service(request: Request, mcp_services: MCPServicesDep,
                         tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, MCPServiceRequest)
    return ok(service_json(await mcp_services.create(tenant_id, body.sent())), status=201)


@router.get("/mcp-services/{service_id}", response_model=Envelope[MCPServiceOut])
async def get_service(service_id: str, mcp_services: MCPServicesDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(service_json(await mcp_services.get(tenant_id, service_id)))


@router.put("/mcp-services/{service_id}", response_model=Envelope[MCPServiceOut],
            openapi_extra=request_body(MCPServiceRequest))
async def update_service(service_id: str, request: Request, mcp_services: MCPServicesDep,
                         tenant_id: TenantDep) -> JSONResponse:
    await mcp_services.get(tenant_id, service_id)  # an unknown id is a 404 before the body is looked at
    body = await read_body(request, MCPServiceRequest)
    return ok(service_json(await mcp_services.update(tenant_id, service_id, body.sent())))


@router.delete("/mcp-services/{service_id}", response_model=Done)
async def delete_service(service_id: str, mcp_services: MCPServicesDep, tenant_id: TenantDep) -> JSONResponse:
    await mcp_services.delete(tenant_id, service_id)
    return ok(message="MCP service deleted successfully")


@router.post("/mcp-services/{service_id}/test", response_model=Envelope[MCPTestResult])
async def test_service(service_id: str, mcp_toolset: MCPToolsetDep, mcp_services: MCPServicesDep,
                       tenant_id: TenantDep) -> JSONResponse:
    reachable, message, tools = await mcp_toolset.probe(await mcp_services.get(tenant_id, service_id))
    return ok({"success": reachable, "message": message, "tools": tools})


@router.get("/mcp-services/{service_id}/tools", response_model=Envelope[list[dict[str, Any]]])
async def list_tools(service_id: str, mcp_toolset: MCPToolsetDep, mcp_services: MCPServicesDep,
                     tenant_id: TenantDep) -> JSONResponse:
    reachable, message, tools = await mcp_toolset.probe(await mcp_services.get(tenant_id, service_id))
    if not reachable:
        raise Unavailable(message)
    return ok(tools)


@router.get("/mcp-services/{service_id}/resources", response_model=Envelope[list[dict[str, Any]]])
async def list_resources(service_id: str, mcp_services: MCPServicesDep, tenant_id: TenantDep) -> JSONResponse:
    await mcp_services.get(tenant_id, service_id)
    return ok([])


@router.get("/mcp-services/{service_id}/tool-approvals", response_model=Envelope[list[ToolApproval]])
async def get_approvals(service_id: str, mcp_services: MCPServicesDep, tenant_id: TenantDep) -> JSONResponse:
    approvals = await mcp_services.tool_approvals(tenant_id, service_id)
    return ok([{"tool_name": k, "require_approval": v} for k, v in approvals.items()])


@router.put("/mcp-services/{service_id}/tool-approvals/{tool}", response_model=Envelope[ToolApproval],
            openapi_extra=request_body(ToolApprovalRequest))
async def set_approval(service_id: str, tool: str, request: Request, mcp_services: MCPServicesDep,
                       tenant_id: TenantDep) -> JSONResponse:
    await mcp_services.get(tenant_id, service_id)  # 404 before the body is looked at, as before
    b = (await read_body(request, ToolApprovalRequest)).sent()
    flag = b.get("require_approval", b.get("requires_approval"))
    if not isinstance(flag, bool):
        raise BadRequest("require_approval (boolean) is required")
    await mcp_services.set_tool_approval(tenant_id, service_id, tool, flag)
    return ok({"tool_name": tool, "require_approval": flag})
