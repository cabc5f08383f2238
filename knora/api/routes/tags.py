"""Tags per knowledge base (api §1.5 "Tags"); the list uses the nested pagination shape (api §1.4)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import KBServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Done, Envelope, NestedPage
from knora.api.schemas.knowledge_bases import TagOut, TagRequest
from knora.api.serializers import MAX_PAGE, require_id
from knora.domain.knowledge import Tag

router = APIRouter(tags=["tags"])


def tag_json(tag: Tag, knowledge_count: int = 0, chunk_count: int = 0) -> dict[str, Any]:
    return tag.model_dump(mode="json") | {"knowledge_count": knowledge_count, "chunk_count": chunk_count}


@router.get("/knowledge-bases/{kb_id}/tags", response_model=Envelope[NestedPage[TagOut]])
async def list_tags(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep,
                    page_no: int = Query(1, alias="page", ge=1, le=MAX_PAGE),
                    page_size: int = Query(20, ge=1, le=1000),
                    keyword: str | None = None) -> JSONResponse:
    result = await kb_service.list_tags(tenant_id, require_id(kb_id, "Knowledge base"), page=page_no,
                                          page_size=page_size, keyword=keyword)
    items = [tag_json(t, k, n) for t, k, n in result.items]
    return ok({"total": result.total, "page": page_no, "page_size": page_size, "data": items})


@router.post("/knowledge-bases/{kb_id}/tags", response_model=Envelope[TagOut],
             openapi_extra=request_body(TagRequest))
async def create_tag(kb_id: str, request: Request, kb_service: KBServiceDep,
                     tenant_id: TenantDep) -> JSONResponse:
    require_id(kb_id, "Knowledge base")
    body = await read_body(request, TagRequest)
    tag = await kb_service.create_tag(tenant_id, kb_id, body.sent())
    return ok(tag_json(tag))


@router.put("/knowledge-bases/{kb_id}/tags/{tag_id}", response_model=Envelope[TagOut],
            openapi_extra=request_body(TagRequest))
async def update_tag(kb_id: str, tag_id: str, request: Request, kb_service: KBServiceDep,
                     tenant_id: TenantDep) -> JSONResponse:
    require_id(kb_id, "Knowledge base")
    require_id(tag_id, "Tag")
    body = await read_body(request, TagRequest)
    tag = await kb_service.update_tag(tenant_id, kb_id, tag_id, body.sent())
    k, n = await kb_service.tag_usage(tag.id)
    return ok(tag_json(tag, k, n))


@router.delete("/knowledge-bases/{kb_id}/tags/{tag_id}", response_model=Done)
async def delete_tag(kb_id: str, tag_id: str, kb_service: KBServiceDep, tenant_id: TenantDep,
                     force: bool = False) -> JSONResponse:
    await kb_service.delete_tag(tenant_id, require_id(kb_id, "Knowledge base"), require_id(tag_id, "Tag"),
                                  force=force)
    return ok(message="Tag deleted")
