"""Model configurations (api §1.5 "Models"). ``api_key`` is accepted on write and never returned.

The list starts with Knora's built-in models — the embedder and chat model chosen by settings (the chat model
is the local extractive answerer when none is configured) and the local reranker — so WeKnora's web UI finds a
ready KnowledgeQA model and a Rerank model for smart reasoning. ``is_default``: at most one per type and
tenant; a built-in is the default of its type until the tenant marks a row (docs/weknora-compat.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import ModelServiceDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Done, Envelope
from knora.api.schemas.models import ModelOut, ModelRequest
from knora.api.serializers import model_json, require_id
from knora.domain.errors import BadRequest
from knora.domain.models import ModelConfig
from knora.services.kb.models import BUILTIN_TYPES, ModelService, builtin_models
from knora.settings import Settings

router = APIRouter(tags=["models"])

_BUILTIN_IDS = tuple(BUILTIN_TYPES)


async def _builtins(settings: Settings, model_service: ModelService, tenant_id: int) -> list[ModelConfig]:
    return builtin_models(settings, tenant_id, await model_service.default_types(tenant_id))


@router.get("/models", response_model=Envelope[list[ModelOut]])
async def list_models(settings: SettingsDep, model_service: ModelServiceDep,
                      tenant_id: TenantDep) -> JSONResponse:
    models = await _builtins(settings, model_service, tenant_id) + await model_service.list(tenant_id)
    return ok([model_json(m) for m in models])


@router.post("/models", status_code=201, response_model=Envelope[ModelOut],
             openapi_extra=request_body(ModelRequest))
async def create_model(request: Request, model_service: ModelServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, ModelRequest)
    m = await model_service.create(tenant_id, body.sent())
    return ok(model_json(m), status=201)


@router.get("/models/{model_id}", response_model=Envelope[ModelOut])
async def get_model(model_id: str, settings: SettingsDep, model_service: ModelServiceDep,
                    tenant_id: TenantDep) -> JSONResponse:
    for m in await _builtins(settings, model_service, tenant_id):
        if m.id == model_id:
            return ok(model_json(m))
    return ok(model_json(await model_service.get(tenant_id, require_id(model_id, "Model"))))


@router.put("/models/{model_id}", response_model=Envelope[ModelOut], openapi_extra=request_body(ModelRequest))
async def update_model(model_id: str, request: Request, model_service: ModelServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    if model_id in _BUILTIN_IDS:
        raise BadRequest("Built-in models are configured through Knora's settings")
    require_id(model_id, "Model")
    body = await read_body(request, ModelRequest)
    m = await model_service.update(tenant_id, model_id, body.sent())
    return ok(model_json(m))


@router.put("/models/{model_id}/default", response_model=Done)
async def set_default_model(model_id: str, model_service: ModelServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    """WeKnora's "set as default": the one default of the model's type in the tenant (a built-in id makes the
    built-in the default again)."""
    if model_id not in _BUILTIN_IDS:
        require_id(model_id, "Model")
    await model_service.set_default(tenant_id, model_id)
    return ok(message="Model set as default")


@router.delete("/models/{model_id}", response_model=Done)
async def delete_model(model_id: str, model_service: ModelServiceDep, tenant_id: TenantDep) -> JSONResponse:
    if model_id in _BUILTIN_IDS:
        raise BadRequest("Built-in models cannot be deleted")
    await model_service.delete(tenant_id, require_id(model_id, "Model"))
    return ok(message="Model deleted")
