"""Knowledge bases (api §1.5 "Knowledge bases"): POST/GET /knowledge-bases, GET/PUT/DELETE
/knowledge-bases/:id."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import KBServiceDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Done, Envelope
from knora.api.schemas.knowledge_bases import (
    CreateKnowledgeBaseRequest,
    KnowledgeBaseOut,
    UpdateKnowledgeBaseRequest,
)
from knora.api.serializers import kb_json, require_id
from knora.ports.store import KBStats

router = APIRouter(tags=["knowledge-bases"])


@router.post("/knowledge-bases", status_code=201, response_model=Envelope[KnowledgeBaseOut],
             openapi_extra=request_body(CreateKnowledgeBaseRequest))
async def create_kb(request: Request, kb_service: KBServiceDep, tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, CreateKnowledgeBaseRequest)
    kb = await kb_service.create(tenant_id, body.sent())
    return ok(kb_json(kb, KBStats()), status=201)


@router.get("/knowledge-bases", response_model=Envelope[list[KnowledgeBaseOut]])
async def list_kbs(kb_service: KBServiceDep, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    kbs = await kb_service.list(tenant_id)
    stats = await kb_service.stats(tenant_id, [kb.id for kb in kbs])
    pins = await s.repos.pins.pinned(tenant_id)
    return ok([kb_json(kb, stats.get(kb.id), pins.get(kb.id)) for kb in kbs])


@router.get("/knowledge-bases/{kb_id}", response_model=Envelope[KnowledgeBaseOut])
async def get_kb(kb_id: str, kb_service: KBServiceDep, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    kb = await kb_service.get(tenant_id, require_id(kb_id, "Knowledge base"))
    stats = await kb_service.stats(tenant_id, [kb.id])
    pins = await s.repos.pins.pinned(tenant_id, [kb.id])
    return ok(kb_json(kb, stats.get(kb.id), pins.get(kb.id)) | {"my_permission": "owner"})


@router.put("/knowledge-bases/{kb_id}", response_model=Envelope[KnowledgeBaseOut],
            openapi_extra=request_body(UpdateKnowledgeBaseRequest))
async def update_kb(kb_id: str, request: Request, kb_service: KBServiceDep, s: ServicesDep,
                    tenant_id: TenantDep) -> JSONResponse:
    require_id(kb_id, "Knowledge base")
    body = await read_body(request, UpdateKnowledgeBaseRequest)
    kb = await kb_service.update(tenant_id, kb_id, body.sent())
    stats = await kb_service.stats(tenant_id, [kb.id])
    pins = await s.repos.pins.pinned(tenant_id, [kb.id])
    return ok(kb_json(kb, stats.get(kb.id), pins.get(kb.id)))


@router.delete("/knowledge-bases/{kb_id}", response_model=Done)
async def delete_kb(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep) -> JSONResponse:
    await kb_service.delete(tenant_id, require_id(kb_id, "Knowledge base"))
    return ok(message="Knowledge base deleted successfully")
