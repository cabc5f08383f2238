"""Moving documents between knowledge bases: ``GET /knowledge-bases/:id/move-targets``,
``POST /knowledge/move`` and ``GET /knowledge/move/progress/:task_id``.

Mounted before ``knora.api.routes.knowledge``, whose ``/knowledge/{knowledge_id}`` would take
``/knowledge/move``. The move itself is a job (``knora.services.kb.move``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body, text_field
from knora.api.deps import KBServiceDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.knowledge_bases import KnowledgeBaseOut
from knora.api.schemas.knowledge_move import KnowledgeMoveProgressOut, MoveKnowledgeOut, MoveKnowledgeRequest
from knora.api.serializers import kb_json, require_id
from knora.domain.common import is_uuid
from knora.domain.errors import BadRequest, NotFound

router = APIRouter(tags=["knowledge"])


@router.get("/knowledge-bases/{kb_id}/move-targets", response_model=Envelope[list[KnowledgeBaseOut]])
async def move_targets(kb_id: str, s: ServicesDep, kb_service: KBServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    targets = await s.kb_move.targets(tenant_id, require_id(kb_id, "Knowledge base"))
    stats = await kb_service.stats(tenant_id, [kb.id for kb in targets])
    return ok([kb_json(kb, stats.get(kb.id)) for kb in targets])


@router.post("/knowledge/move", response_model=Envelope[MoveKnowledgeOut],
             openapi_extra=request_body(MoveKnowledgeRequest))
async def move_knowledge(request: Request, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, MoveKnowledgeRequest)
    ids = b.knowledge_ids
    if not isinstance(ids, list) or not ids or not all(isinstance(v, str) for v in ids):
        raise BadRequest("knowledge_ids must be a non-empty list of knowledge ids")
    for kid in ids:
        if not is_uuid(kid):
            raise NotFound(f"Knowledge {kid} not found in this knowledge base")
    source = require_id(text_field(b.source_kb_id, "source_kb_id", required=True),
                        "Source knowledge base")
    target = require_id(text_field(b.target_kb_id, "target_kb_id", required=True),
                        "Target knowledge base")
    mode = text_field(b.mode, "mode", required=True)
    p = await s.kb_move.start(tenant_id, ids, source, target, mode)
    return ok({"task_id": p.task_id, "source_kb_id": p.source_id, "target_kb_id": p.target_id,
               "knowledge_count": p.total, "message": "Knowledge move task started"})


@router.get("/knowledge/move/progress/{task_id}", response_model=Envelope[KnowledgeMoveProgressOut])
async def move_progress(task_id: str, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    p = await s.kb_move.progress.get(tenant_id, task_id)
    if p is None:
        raise NotFound("Task not found")
    return ok(p.public_move())
