"""Agents (api §1.5 "Agents"): built-ins and custom agents, CRUD, copy, presets; tool-approval resolution."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import AgentServiceDep, ApprovalsDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.agents import AgentRequest, ToolApprovalDecisionRequest, ToolApprovalResolved
from knora.api.schemas.envelope import Done, Envelope
from knora.api.serializers import agent_json
from knora.domain.errors import BadRequest, NotFound
from knora.domain.models import AgentConfig
from knora.ports.tool import ApprovalDecision
from knora.services.agent.builtins import AGENT_TYPE_PRESETS

router = APIRouter(tags=["agents"])


@router.get("/agents", response_model=Envelope[list[AgentConfig]])
async def list_agents(agent_service: AgentServiceDep, tenant_id: TenantDep) -> JSONResponse:
    return ok([agent_json(a) for a in await agent_service.list(tenant_id)])


@router.get("/agents/placeholders")
async def placeholders(_tenant_id: TenantDep) -> JSONResponse:
    return ok({"system_prompt": [{"name": n, "description": d} for n, d in (
        ("current_time", "RFC 3339 time of the request"), ("web_search_status", "Enabled or Disabled"),
        ("knowledge_bases", "The bound knowledge bases"), ("language", "The answer language"))]})


@router.get("/agents/type-presets")
async def type_presets(_tenant_id: TenantDep) -> JSONResponse:
    return ok([{"agent_type": k, "config": v} for k, v in AGENT_TYPE_PRESETS.items()])


@router.post("/agents", status_code=201, response_model=Envelope[AgentConfig],
             openapi_extra=request_body(AgentRequest))
async def create_agent(request: Request, agent_service: AgentServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, AgentRequest)
    return ok(agent_json(await agent_service.create(tenant_id, body.sent())), status=201)


@router.get("/agents/{agent_id}", response_model=Envelope[AgentConfig])
async def get_agent(agent_id: str, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    """The tenant's own agent, or one another tenant shares with it (read only)."""
    agent = await s.shares.usable_agent(tenant_id, agent_id)
    if agent is None:
        raise NotFound("agent not found")
    return ok(agent_json(agent))


@router.put("/agents/{agent_id}", response_model=Envelope[AgentConfig],
            openapi_extra=request_body(AgentRequest))
async def update_agent(agent_id: str, request: Request, agent_service: AgentServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, AgentRequest)
    return ok(agent_json(await agent_service.update(tenant_id, agent_id, body.sent())))


@router.delete("/agents/{agent_id}", response_model=Done)
async def delete_agent(agent_id: str, agent_service: AgentServiceDep, tenant_id: TenantDep) -> JSONResponse:
    await agent_service.delete(tenant_id, agent_id)
    return ok(message="Agent deleted successfully")


@router.post("/agents/{agent_id}/copy", status_code=201, response_model=Envelope[AgentConfig])
async def copy_agent(agent_id: str, agent_service: AgentServiceDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(agent_json(await agent_service.copy(tenant_id, agent_id)), status=201)


@router.get("/agents/{agent_id}/suggested-questions")
async def suggested_questions(agent_id: str, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    if await s.shares.usable_agent(tenant_id, agent_id) is None:
        raise NotFound("agent not found")
    return ok({"questions": []})


@router.post("/agent/tool-approvals/{pending_id}", response_model=Envelope[ToolApprovalResolved],
             openapi_extra=request_body(ToolApprovalDecisionRequest))
async def resolve_approval(pending_id: str, request: Request, approvals: ApprovalsDep,
                           tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, ToolApprovalDecisionRequest)
    approved, modified = body.approved, body.modified_args
    if not isinstance(approved, bool):
        raise BadRequest("approved (boolean) is required")
    if modified is not None and not isinstance(modified, dict):
        raise BadRequest("modified_args must be a JSON object")
    await approvals.resolve(tenant_id, pending_id, ApprovalDecision(
        approved=approved, reason=str(body.reason or ""), modified_args=modified))
    return ok({"pending_id": pending_id, "approved": approved})
