"""Chunks (api §1.5 "Chunks"): paged list per document, get/edit/delete one; an edit re-indexes the chunk."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from knora.api.body import parse_json, read_body, request_body
from knora.api.deps import ChunkServiceDep, TenantDep
from knora.api.envelope import ok, page
from knora.api.schemas.chunks import ChunkOut, UpdateChunkRequest
from knora.api.schemas.envelope import Done, Envelope, PageEnvelope
from knora.api.serializers import MAX_PAGE, chunk_json, require_id
from knora.domain.errors import BadRequest, ValidationFailed

router = APIRouter(tags=["chunks"])


@router.get("/chunks/by-id/{chunk_id}", response_model=Envelope[ChunkOut])
async def get_chunk_by_id(chunk_id: str, chunk_service: ChunkServiceDep,
                          tenant_id: TenantDep) -> JSONResponse:
    chunk = await chunk_service.get_by_id(tenant_id, require_id(chunk_id, "Chunk"))
    return ok(chunk_json(chunk))


@router.get("/chunks/{knowledge_id}", response_model=PageEnvelope[ChunkOut])
async def list_chunks(knowledge_id: str, chunk_service: ChunkServiceDep, tenant_id: TenantDep,
                      page_no: int = Query(1, alias="page", ge=1, le=MAX_PAGE),
                      page_size: int = Query(20, ge=1, le=1000),
                      chunk_type: Annotated[list[str] | None, Query()] = None) -> JSONResponse:
    result = await chunk_service.list(tenant_id, require_id(knowledge_id, "Knowledge"), page=page_no,
                                        page_size=page_size, chunk_types=chunk_type or ["text"])
    return page([chunk_json(x) for x in result.items], total=result.total, page=page_no, page_size=page_size)


@router.delete("/chunks/{knowledge_id}", response_model=Done)
async def delete_all_chunks(knowledge_id: str, chunk_service: ChunkServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    await chunk_service.delete_all(tenant_id, require_id(knowledge_id, "Knowledge"))
    return ok(message="Chunks deleted")


@router.get("/chunks/{knowledge_id}/{chunk_id}", response_model=Envelope[ChunkOut])
async def get_chunk(knowledge_id: str, chunk_id: str, chunk_service: ChunkServiceDep,
                    tenant_id: TenantDep) -> JSONResponse:
    chunk = await chunk_service.get(tenant_id, require_id(knowledge_id, "Knowledge"), require_id(chunk_id,
                                                                                                 "Chunk"))
    return ok(chunk_json(chunk))


_TYPES = {"content": str, "chunk_index": int, "is_enabled": bool, "start_at": int, "end_at": int,
          "image_info": list, "expected_revision": int}
_BAD_IMAGE_INFO = "image_info must be a list of objects, or that list as JSON text"


def _image_info(value: object) -> object:
    """WeKnora sends ``image_info`` as JSON text (``""`` for none); Knora stores the list it holds."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return []
    try:
        parsed = parse_json(value)
    except BadRequest as exc:
        raise ValidationFailed(_BAD_IMAGE_INFO) from exc
    if not isinstance(parsed, list) or not all(isinstance(v, dict) for v in parsed):
        raise ValidationFailed(_BAD_IMAGE_INFO)
    return parsed


@router.put("/chunks/{knowledge_id}/{chunk_id}", response_model=Envelope[ChunkOut],
            openapi_extra=request_body(UpdateChunkRequest))
async def update_chunk(knowledge_id: str, chunk_id: str, request: Request, chunk_service: ChunkServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    b = (await read_body(request, UpdateChunkRequest)).sent()
    changes: dict[str, Any] = {}
    for field, typ in _TYPES.items():
        if field in b and b[field] is not None:
            value = _image_info(b[field]) if field == "image_info" else b[field]
            if (typ is int and (isinstance(value, bool) or not isinstance(value,
                                                                          int))) or not isinstance(value,
                                                                                                   typ):
                raise ValidationFailed(f"{field} must be of type {typ.__name__}")
            changes[field] = value
    expected = changes.pop("expected_revision", None)
    chunk = await chunk_service.update(tenant_id, require_id(knowledge_id, "Knowledge"),
                                       require_id(chunk_id, "Chunk"), changes, expected_revision=expected)
    return ok(chunk_json(chunk))


@router.delete("/chunks/{knowledge_id}/{chunk_id}", response_model=Done)
async def delete_chunk(knowledge_id: str, chunk_id: str, chunk_service: ChunkServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    await chunk_service.delete(tenant_id, require_id(knowledge_id, "Knowledge"), require_id(chunk_id,
                                                                                            "Chunk"))
    return ok(message="Chunk deleted")
