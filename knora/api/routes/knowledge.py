"""Documents (api §1.5 "Knowledge"): file / URL / manual creation, paged list with parse_status, get, update,
delete, re-parse and download. An upload's body is counted while it arrives (``knora.api.body_limit``, which
also refuses a declared ``Content-Length`` over the limit before reading); the file itself is checked against
``max_upload_bytes`` here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile

from knora.api.body import as_object, parse_json, read_body, request_body
from knora.api.deps import BlobsDep, IngestServiceDep, SettingsDep, TenantDep
from knora.api.envelope import ok, page
from knora.api.schemas.envelope import Envelope, PageEnvelope
from knora.api.schemas.knowledge import (
    CreateFromURLRequest,
    CreateManualRequest,
    DeleteTask,
    KnowledgeOut,
    UpdateKnowledgeRequest,
)
from knora.api.serializers import MAX_PAGE, knowledge_json, require_id
from knora.domain.errors import AppError, BadRequest, NotFound, PayloadTooLarge
from knora.ports.store import KnowledgeFilter
from knora.services.ingest.process_config import ProcessOverrides, parse_process_config
from knora.services.ingest.service import DuplicateKnowledge

router = APIRouter(tags=["knowledge"])

_READ = 1024 * 1024


def duplicate_response(exc: DuplicateKnowledge) -> JSONResponse:
    """WeKnora's 409 (api §1.3): top-level message/data/code, plus Knora's usual ``error`` object."""
    from fastapi.encoders import jsonable_encoder

    body = {"success": False, "message": exc.message, "code": exc.kind, "data": knowledge_json(exc.existing),
            "error": {"code": exc.code, "message": exc.message}}
    return JSONResponse(jsonable_encoder(body), status_code=409)


async def _read_upload(upload: UploadFile, limit: int) -> bytes:
    buf = bytearray()
    while piece := await upload.read(_READ):
        buf.extend(piece)
        if len(buf) > limit:
            raise PayloadTooLarge(f"File is larger than the limit of {limit} bytes")
    return bytes(buf)


def _opt_str(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def process_overrides(raw: object, enable_multimodel: object) -> ProcessOverrides | None:
    """``process_config`` with the older ``enable_multimodel`` field folded in (the config's own wins)."""
    cfg = parse_process_config(raw)
    if enable_multimodel is None or enable_multimodel == "":
        return cfg
    if isinstance(enable_multimodel, str):
        lowered = enable_multimodel.strip().lower()
        if lowered not in ("true", "false", "1", "0"):
            raise BadRequest("Invalid enable_multimodel format: \"true\" or \"false\"")
        enable_multimodel = lowered in ("true", "1")
    if not isinstance(enable_multimodel, bool):
        raise BadRequest("Invalid enable_multimodel format: a boolean")
    cfg = cfg or ProcessOverrides()
    if cfg.enable_multimodel is None:
        cfg.enable_multimodel = enable_multimodel
    return cfg


@router.post("/knowledge-bases/{kb_id}/knowledge/file", response_model=Envelope[KnowledgeOut])
async def create_from_file(kb_id: str, request: Request, settings: SettingsDep,
                           ingest_service: IngestServiceDep, tenant_id: TenantDep) -> Response:
    require_id(kb_id, "Knowledge base")
    limit = settings.max_upload_bytes
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise BadRequest("Expected a multipart/form-data body with a 'file' field")
    try:
        form = await request.form(max_files=1, max_fields=50)
    except AppError:  # the body limit (knora.api.body_limit) stopped the read: its 413 stands
        raise
    except Exception as exc:
        raise BadRequest(f"Malformed multipart body: {exc}") from exc
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("The 'file' field is required")
        data = await _read_upload(upload, limit)
        name = _opt_str(form.get("fileName")) or upload.filename or ""
        metadata: dict[str, Any] = {}
        raw_meta = form.get("metadata")
        if isinstance(raw_meta, str) and raw_meta.strip():
            try:
                metadata = as_object(parse_json(raw_meta))
            except BadRequest as exc:
                raise BadRequest(f"metadata must be a JSON object string ({exc.message})") from exc
        channel = _opt_str(form.get("channel")) or "web"
        overrides = process_overrides(form.get("process_config"), form.get("enable_multimodel"))
        try:
            k = await ingest_service.add_file(tenant_id, kb_id, name, data, metadata=metadata,
                                                tag_id=_opt_str(form.get("tag_id")), channel=channel,
                                                process_config=overrides)
        except DuplicateKnowledge as exc:
            return duplicate_response(exc)
    finally:
        await form.close()
    return ok(knowledge_json(k))


@router.post("/knowledge-bases/{kb_id}/knowledge/url", status_code=201, response_model=Envelope[KnowledgeOut],
             openapi_extra=request_body(CreateFromURLRequest))
async def create_from_url(kb_id: str, request: Request, ingest_service: IngestServiceDep,
                          tenant_id: TenantDep) -> Response:
    require_id(kb_id, "Knowledge base")
    b = await read_body(request, CreateFromURLRequest)
    if not isinstance(b.url, str) or not b.url.strip():
        raise BadRequest("url is required")
    overrides = process_overrides(b.process_config, b.enable_multimodel)
    try:
        k = await ingest_service.add_url(tenant_id, kb_id, b.url, title=str(b.title or ""),
                                           file_name=str(b.file_name or ""), file_type=str(b.file_type or ""),
                                           tag_id=_opt_str(b.tag_id), channel=str(b.channel or "web"),
                                           process_config=overrides)
    except DuplicateKnowledge as exc:
        return duplicate_response(exc)
    return ok(knowledge_json(k), status=201)


@router.post("/knowledge-bases/{kb_id}/knowledge/manual", response_model=Envelope[KnowledgeOut],
             openapi_extra=request_body(CreateManualRequest))
async def create_manual(kb_id: str, request: Request, ingest_service: IngestServiceDep,
                        tenant_id: TenantDep) -> Response:
    require_id(kb_id, "Knowledge base")
    b = await read_body(request, CreateManualRequest)
    if not isinstance(b.content, str):
        raise BadRequest("content is required")
    status = str(b.status or "publish")
    if status == "published":
        status = "publish"
    if status not in ("draft", "publish"):
        raise BadRequest("status must be 'draft' or 'publish'")
    tag_id = _opt_str(b.tag_id)
    if tag_id is None and isinstance(b.tag_ids, list) and b.tag_ids:
        tag_id = _opt_str(b.tag_ids[0])
    k = await ingest_service.add_manual(tenant_id, kb_id, str(b.title or ""), b.content, status=status,
                                          tag_id=tag_id, channel=str(b.channel or "web"))
    return ok(knowledge_json(k))


@router.get("/knowledge-bases/{kb_id}/knowledge", response_model=PageEnvelope[KnowledgeOut])
async def list_knowledge(kb_id: str, ingest_service: IngestServiceDep, tenant_id: TenantDep,
                         page_no: int = Query(1, alias="page", ge=1, le=MAX_PAGE),
                         page_size: int = Query(20, ge=1, le=1000), tag_id: str | None = None,
                         keyword: str | None = None, file_type: str | None = None,
                         parse_status: str | None = None,
                         source: str | None = None) -> JSONResponse:
    result = await ingest_service.list_documents(
        tenant_id, require_id(kb_id, "Knowledge base"), page=page_no, page_size=page_size,
        filters=KnowledgeFilter(tag_id=tag_id, keyword=keyword, file_type=file_type,
                                                                  parse_status=parse_status, source=source))
    return page([knowledge_json(k) for k in result.items], total=result.total, page=page_no,
                page_size=page_size)


@router.get("/knowledge/batch", response_model=Envelope[list[KnowledgeOut]])
async def batch_get(ingest_service: IngestServiceDep, tenant_id: TenantDep,
                    ids: Annotated[list[str] | None, Query()] = None) -> JSONResponse:
    found = await ingest_service.get_many(tenant_id, (ids or [])[:200])
    return ok([knowledge_json(k) for k in found])


@router.get("/knowledge/{knowledge_id}", response_model=Envelope[KnowledgeOut])
async def get_knowledge(knowledge_id: str, ingest_service: IngestServiceDep,
                        tenant_id: TenantDep) -> JSONResponse:
    k = await ingest_service.get(tenant_id, require_id(knowledge_id, "Knowledge"))
    return ok(knowledge_json(k))


@router.put("/knowledge/{knowledge_id}", response_model=Envelope[KnowledgeOut],
            openapi_extra=request_body(UpdateKnowledgeRequest))
async def update_knowledge(knowledge_id: str, request: Request, ingest_service: IngestServiceDep,
                           tenant_id: TenantDep) -> JSONResponse:
    require_id(knowledge_id, "Knowledge")
    b = await read_body(request, UpdateKnowledgeRequest)
    saved = await ingest_service.edit(
        tenant_id, knowledge_id, title=b.title if isinstance(b.title, str) else None,
        description=b.description if isinstance(b.description, str) else None,
        set_tag="tag_id" in b.model_fields_set, tag_id=_opt_str(b.tag_id),
        metadata=b.metadata if isinstance(b.metadata, dict) else None)
    return ok(knowledge_json(saved), message="Knowledge updated")


@router.delete("/knowledge/{knowledge_id}", response_model=Envelope[DeleteTask])
async def delete_knowledge(knowledge_id: str, ingest_service: IngestServiceDep,
                           tenant_id: TenantDep) -> JSONResponse:
    await ingest_service.delete(tenant_id, require_id(knowledge_id, "Knowledge"))
    # WeKnora answers with a task id (its delete is asynchronous); Knora's is done by now.
    return ok({"task_id": knowledge_id}, message="Delete task submitted")


@router.post("/knowledge/{knowledge_id}/reparse", response_model=Envelope[KnowledgeOut])
async def reparse_knowledge(knowledge_id: str, ingest_service: IngestServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    k = await ingest_service.reparse(tenant_id, require_id(knowledge_id, "Knowledge"))
    return ok(knowledge_json(k), message="Reparse task submitted")


@router.get("/knowledge/{knowledge_id}/download")
async def download_knowledge(knowledge_id: str, ingest_service: IngestServiceDep, blobs: BlobsDep,
                             tenant_id: TenantDep) -> Response:
    k = await ingest_service.get(tenant_id, require_id(knowledge_id, "Knowledge"))
    if not k.file_path:
        raise NotFound("This document has no stored original")
    try:
        data = await blobs.get(k.file_path)
    except KeyError as exc:
        raise NotFound("The stored original is missing") from exc
    from urllib.parse import quote

    return Response(data, media_type="application/octet-stream",
                    headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quote(k.file_name)}"})
