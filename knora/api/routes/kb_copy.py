"""Copying a knowledge base: ``POST /knowledge-bases/copy`` (into a named target, or a new one),
``GET /knowledge-bases/copy/progress/:task_id``, ``POST /knowledge-bases/:id/duplicate`` (a new
knowledge base with the source's settings and a copy of its documents), and
``POST /knowledge-bases/:id/rebuild-index`` (its index rebuilt from its chunks, as a job).

Mounted before ``knora.api.routes.knowledge_bases``, whose ``/knowledge-bases/{id}`` would take
``/knowledge-bases/copy``. The copy itself is a job (``knora.services.kb.copy``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body, text_field
from knora.api.deps import KBServiceDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.kb_copy import (
    CopyKnowledgeBaseOut,
    CopyKnowledgeBaseRequest,
    DuplicateKnowledgeBaseOut,
    KBCloneProgressOut,
    RebuildIndexOut,
)
from knora.api.serializers import kb_json, require_id
from knora.domain.errors import BadRequest, NotFound

router = APIRouter(tags=["knowledge-bases"])


@router.post("/knowledge-bases/copy", response_model=Envelope[CopyKnowledgeBaseOut],
             openapi_extra=request_body(CopyKnowledgeBaseRequest))
async def copy_knowledge_base(request: Request, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, CopyKnowledgeBaseRequest)
    source = text_field(b.source_id, "source_id")
    target, task_id = text_field(b.target_id, "target_id"), text_field(b.task_id, "task_id")
    if not source:
        raise BadRequest("source_id is required")
    if len(task_id) > 64 or any(not (ch.isalnum() or ch in "-_") for ch in task_id):
        raise BadRequest("task_id must be at most 64 letters, digits, '-' or '_'")
    p = await s.kb_copy.start(tenant_id, require_id(source, "Source knowledge base"),
                              require_id(target, "Target knowledge base") if target else "", task_id=task_id)
    return ok({"task_id": p.task_id, "source_id": p.source_id, "target_id": p.target_id,
               "message": "Knowledge base copy task started"})


@router.get("/knowledge-bases/copy/progress/{task_id}", response_model=Envelope[KBCloneProgressOut])
async def copy_progress(task_id: str, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    p = await s.kb_copy.progress.get(tenant_id, task_id)
    if p is None:
        raise NotFound("Task not found")
    return ok(p.public())


@router.post("/knowledge-bases/{kb_id}/duplicate", response_model=Envelope[DuplicateKnowledgeBaseOut])
async def duplicate_knowledge_base(kb_id: str, s: ServicesDep, kb_service: KBServiceDep,
                                   tenant_id: TenantDep) -> JSONResponse:
    src = await kb_service.get(tenant_id, require_id(kb_id, "Knowledge base"))
    p = await s.kb_copy.start(tenant_id, src.id)
    kb = await kb_service.get(tenant_id, p.target_id)
    stats = await kb_service.stats(tenant_id, [kb.id])
    return ok({"task_id": p.task_id, "source_id": p.source_id, "target_id": p.target_id,
               "message": "Knowledge base duplicated; its documents are being copied",
               "knowledge_base": kb_json(kb, stats.get(kb.id))})


@router.post("/knowledge-bases/{kb_id}/rebuild-index", response_model=Envelope[RebuildIndexOut])
async def rebuild_index(kb_id: str, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    p = await s.kb_rebuild.start(tenant_id, require_id(kb_id, "Knowledge base"))
    # WeKnora's UI reads ``documentCount`` off the answer itself for its toast
    return ok({"task_id": p.task_id, "knowledge_base_id": p.source_id, "document_count": p.total},
              message="Index rebuild started", documentCount=p.total)
