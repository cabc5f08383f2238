"""WeKnora's per-knowledge-base initialization config: ``GET``/``PUT /initialization/config/:kbId``, which the
web UI's knowledge-base settings modal saves after ``PUT /knowledge-bases/:id`` (issue 13 item 2). The
translation to Knora's settings is ``knora.services.kb.initialization``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import KBServiceDep, ModelServiceDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.initialization import KBModelConfigRequest
from knora.api.schemas.knowledge_bases import KnowledgeBaseOut
from knora.api.serializers import kb_json, require_id
from knora.domain.common import is_uuid
from knora.domain.models import ModelConfig
from knora.services.kb import initialization
from knora.services.kb.models import builtin_models

router = APIRouter(tags=["initialization"])


@router.get("/initialization/config/{kb_id}")
async def get_config(kb_id: str, kb_service: KBServiceDep, model_service: ModelServiceDep,
                     settings: SettingsDep, tenant_id: TenantDep) -> JSONResponse:
    kb = await kb_service.get(tenant_id, require_id(kb_id, "Knowledge base"))
    stats = (await kb_service.stats(tenant_id, [kb.id]))[kb.id]

    async def lookup(model_id: str) -> ModelConfig | None:
        for m in builtin_models(settings, tenant_id):
            if m.id == model_id:
                return m
        return await model_service.repos.models.get(tenant_id, model_id) if is_uuid(model_id) else None

    return ok(await initialization.view(kb, has_files=stats.knowledge_count > 0, lookup=lookup))


@router.put("/initialization/config/{kb_id}", response_model=Envelope[KnowledgeBaseOut],
            openapi_extra=request_body(KBModelConfigRequest))
async def put_config(kb_id: str, request: Request, kb_service: KBServiceDep,
                     tenant_id: TenantDep) -> JSONResponse:
    require_id(kb_id, "Knowledge base")
    body = await read_body(request, KBModelConfigRequest)
    kb = await initialization.update(kb_service, tenant_id, kb_id, body.sent())
    stats = await kb_service.stats(tenant_id, [kb.id])
    return ok(kb_json(kb, stats.get(kb.id)), message="Configuration updated")
