"""WeKnora's per-knowledge-base initialization config: ``GET``/``PUT /initialization/config/:kbId``, which the
web UI's knowledge-base settings modal saves after ``PUT /knowledge-bases/:id`` (issue 13 item 2). The
translation to Knora's settings is ``knora.services.kb.initialization``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, read_object, request_body
from knora.api.deps import KBServiceDep, ModelServiceDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.initialization import KBModelConfigRequest
from knora.api.schemas.knowledge_bases import KnowledgeBaseOut
from knora.api.serializers import kb_json, model_json, require_id
from knora.domain.common import is_uuid
from knora.domain.models import ModelConfig
from knora.services.kb import initialization
from knora.services.kb.models import ModelService, builtin_models
from knora.settings import Settings

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


@router.post("/initialization/initialize/{kb_id}")
async def initialize_kb(kb_id: str, request: Request, kb_service: KBServiceDep,
                        model_service: ModelServiceDep,
                        settings: SettingsDep, tenant_id: TenantDep) -> JSONResponse:
    """WeKnora's older save of the settings modal: the same change as ``PUT /initialization/config/:kbId``,
    with models named by source, name and address; a model the tenant does not have is added as
    ``POST /models`` adds it (``initialization.legacy_body``)."""
    require_id(kb_id, "Knowledge base")
    await kb_service.get(tenant_id, kb_id)  # 404 before the body is looked at, and before any model is added
    used: list[ModelConfig] = []

    async def resolve(model_type: str, section: dict[str, object]) -> str:
        m = await _named_model(model_service, settings, tenant_id, model_type, section)
        used.append(m)
        return m.id

    body = await initialization.legacy_body(await read_object(request), resolve)
    kb = await initialization.update(kb_service, tenant_id, kb_id, body)
    stats = await kb_service.stats(tenant_id, [kb.id])
    return ok({"models": [model_json(m) for m in used], "knowledge_base": kb_json(kb, stats.get(kb.id))},
              message="Configuration updated")


async def _named_model(model_service: ModelService, settings: Settings, tenant_id: int, model_type: str,
                       section: dict[str, object]) -> ModelConfig:
    candidates = builtin_models(settings, tenant_id) + await model_service.list(tenant_id)
    for m in candidates:
        if initialization.same_model(m, model_type, section):
            return m
    return await model_service.create(tenant_id, initialization.legacy_model_body(model_type, section))
