"""The model settings page: ``GET /models/providers`` and the editor's "test connection" checks
(``POST /initialization/remote/check``, ``/initialization/embedding/test``, ``/initialization/rerank/check``).

Mounted before ``knora.api.routes.models``, whose ``/models/{model_id}`` would take ``/models/providers``.
A model that does not answer is ``200`` with ``available: false`` and the reason (WeKnora's shape, which the
editor shows); a body that names no model is a 400 with the envelope. The checks live in
``knora.services.kb.model_checks``.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import UploadFile

from knora.api.body import read_body, request_body, text_field
from knora.api.deps import ServicesDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.model_checks import CheckOut, ModelCheckRequest, ProviderOut
from knora.domain.errors import AppError, BadRequest
from knora.services.kb.model_checks import MODEL_TYPES, CheckResult, CheckTarget, ModelChecks, providers

router = APIRouter(tags=["models"])


async def _checks(s: ServicesDep) -> ModelChecks:
    return ModelChecks(s.settings, s.repos.models)


ChecksDep = Annotated[ModelChecks, Depends(_checks)]


@router.get("/models/providers", response_model=Envelope[list[ProviderOut]])
async def list_providers(_tenant_id: TenantDep, model_type: str = "") -> JSONResponse:
    if model_type and model_type not in MODEL_TYPES:
        raise BadRequest(f"unknown model_type {model_type!r}; one of {', '.join(MODEL_TYPES)}")
    return ok([{"value": p.value, "label": p.label, "description": p.description,
                "defaultUrls": p.default_urls, "modelTypes": list(p.model_types)}
               for p in providers(model_type)])


async def _target(request: Request) -> CheckTarget:
    b = await read_body(request, ModelCheckRequest)
    name = text_field(b.modelName, "modelName")
    if not name:
        raise BadRequest("modelName is required")
    dimension = b.dimension
    if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int)
                                  or not 0 <= dimension <= 65536):
        raise BadRequest("dimension must be a whole number between 0 and 65536")
    provider = text_field(b.provider, "provider") or text_field(b.interfaceType, "interfaceType")
    return CheckTarget(name=name, base_url=text_field(b.baseUrl, "baseUrl"),
                       api_key=text_field(b.apiKey, "apiKey"), provider=provider,
                       source=text_field(b.source, "source") or "remote", dimension=dimension or None,
                       model_id=text_field(b.modelId, "modelId"))


@router.post("/initialization/multimodal/test")
async def check_multimodal(request: Request, checks: ChecksDep, settings: SettingsDep,
                           tenant_id: TenantDep) -> JSONResponse:
    """WeKnora's multimodal test (multipart: ``image``, ``vlm_model``, ``vlm_base_url``, ``vlm_api_key``,
    ``vlm_interface_type``; its storage and chunking fields are not read: Knora stores images itself). The
    VLM captions the image as ingestion would; ``ocr`` is empty (Knora's OCR runs in the parsers)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise BadRequest("Expected a multipart/form-data body with an 'image' field")
    try:
        form = await request.form(max_files=1, max_fields=50)
    except AppError:
        raise
    except Exception as exc:
        raise BadRequest(f"Malformed multipart body: {exc}") from exc
    try:
        name, base_url = _form_text(form.get("vlm_model")), _form_text(form.get("vlm_base_url"))
        if not name or not base_url:
            raise BadRequest("VLM model name and Base URL cannot be empty")
        upload = form.get("image")
        if not isinstance(upload, UploadFile):
            raise BadRequest("Failed to get uploaded image")
        mime = (upload.content_type or "").lower()
        if not mime.startswith("image/"):
            raise BadRequest("Only image files are allowed")
        data = await upload.read(settings.max_upload_bytes + 1)
        if len(data) > settings.max_upload_bytes:
            raise BadRequest(f"Image file size cannot exceed {settings.max_upload_bytes} bytes")
        interface = _form_text(form.get("vlm_interface_type")).lower()
        target = CheckTarget(name=name, base_url=base_url, api_key=_form_text(form.get("vlm_api_key")),
                             provider="ollama" if interface == "ollama" else "",
                             source="local" if interface == "ollama" else "remote")
    finally:
        await form.close()
    started = time.monotonic()
    result = await checks.vision(tenant_id, target, data, mime)
    ms = int((time.monotonic() - started) * 1000)
    if not result.available:
        return ok({"success": False, "message": result.message, "processing_time": ms})
    return ok({"success": True, "caption": result.message, "ocr": "", "processing_time": ms})


def _form_text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _answer(result: CheckResult) -> JSONResponse:
    data: dict[str, object] = {"available": result.available, "message": result.message}
    if result.dimension is not None:
        data["dimension"] = result.dimension
    return ok(data)


@router.post("/initialization/remote/check", response_model=Envelope[CheckOut],
             openapi_extra=request_body(ModelCheckRequest))
async def check_chat(request: Request, checks: ChecksDep, tenant_id: TenantDep) -> JSONResponse:
    return _answer(await checks.chat(tenant_id, await _target(request)))


@router.post("/initialization/embedding/test", response_model=Envelope[CheckOut],
             openapi_extra=request_body(ModelCheckRequest))
async def check_embedding(request: Request, checks: ChecksDep, tenant_id: TenantDep) -> JSONResponse:
    return _answer(await checks.embedding(tenant_id, await _target(request)))


@router.post("/initialization/rerank/check", response_model=Envelope[CheckOut],
             openapi_extra=request_body(ModelCheckRequest))
async def check_rerank(request: Request, checks: ChecksDep, tenant_id: TenantDep) -> JSONResponse:
    return _answer(await checks.rerank(tenant_id, await _target(request)))
