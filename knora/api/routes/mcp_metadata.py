"""``GET /mcp-services/:id/metadata`` and ``POST /mcp-services/:id/metadata/refresh`` (WeKnora's MCP settings
page): the server's name, version, description, instructions and tools as Knora's MCP client saw them.

The GET reads the last snapshot and never connects (``null`` when the service was never refreshed, as WeKnora
answers a service it never synchronised); the refresh connects, takes a new snapshot and answers it. Snapshots
live in this process (``knora.adapters.mcp.metadata``). A service that cannot be reached is a 503 with the
reason; a service of another tenant is a 404.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.adapters.mcp.client import MCPUnavailable
from knora.api.deps import MCPServicesDep, MCPToolsetDep, TenantDep
from knora.api.envelope import ok
from knora.domain.errors import Unavailable

router = APIRouter(tags=["mcp-services"])


@router.get("/mcp-services/{service_id}/metadata")
async def get_metadata(service_id: str, mcp_toolset: MCPToolsetDep, mcp_services: MCPServicesDep,
                       tenant_id: TenantDep) -> JSONResponse:
    service = await mcp_services.get(tenant_id, service_id)
    snap = mcp_toolset.metadata.get(service)
    # ``data: null`` for never refreshed (``ok(None)`` would leave ``data`` out)
    return JSONResponse({"success": True, "data": snap.json(service) if snap is not None else None})


@router.post("/mcp-services/{service_id}/metadata/refresh")
async def refresh_metadata(service_id: str, mcp_toolset: MCPToolsetDep, mcp_services: MCPServicesDep,
                           tenant_id: TenantDep) -> JSONResponse:
    service = await mcp_services.get(tenant_id, service_id)
    try:
        description = await mcp_toolset.describe(service)
    except MCPUnavailable as exc:
        raise Unavailable(str(exc)) from exc
    return ok(mcp_toolset.metadata.put(service, description).json(service))
