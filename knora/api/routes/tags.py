"""Tags per knowledge base (api §1.5 "Tags"); the list uses the nested pagination shape (api §1.4)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from knora.api.deps import KBServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.routes.knowledge_bases import JsonBody, as_dict, require_id
from knora.domain.knowledge import Tag

router = APIRouter(tags=["tags"])


def tag_json(tag: Tag, knowledge_count: int = 0, chunk_count: int = 0) -> dict[str, Any]:
    return tag.model_dump(mode="json") | {"knowledge_count": knowledge_count, "chunk_count": chunk_count}


@router.get("/knowledge-bases/{kb_id}/tags")
async def list_tags(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep, page_no: int = Query(1, alias="page", ge=1),
                    page_size: int = Query(20, ge=1, le=1000), keyword: str | None = None) -> JSONResponse:
    result = await kb_service.list_tags(tenant_id, require_id(kb_id, "Knowledge base"), page=page_no,
                                          page_size=page_size, keyword=keyword)
    items = [tag_json(t, k, n) for t, k, n in result.items]
    return ok({"total": result.total, "page": page_no, "page_size": page_size, "data": items})


@router.post("/knowledge-bases/{kb_id}/tags")
async def create_tag(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep, body: Any = JsonBody) -> JSONResponse:
    tag = await kb_service.create_tag(tenant_id, require_id(kb_id, "Knowledge base"), as_dict(body))
    return ok(tag_json(tag))


@router.put("/knowledge-bases/{kb_id}/tags/{tag_id}")
async def update_tag(kb_id: str, tag_id: str, kb_service: KBServiceDep, tenant_id: TenantDep,
                     body: Any = JsonBody) -> JSONResponse:
    tag = await kb_service.update_tag(tenant_id, require_id(kb_id, "Knowledge base"), require_id(tag_id, "Tag"),
                                        as_dict(body))
    k, n = await kb_service.tag_usage(tag.id)
    return ok(tag_json(tag, k, n))


@router.delete("/knowledge-bases/{kb_id}/tags/{tag_id}")
async def delete_tag(kb_id: str, tag_id: str, kb_service: KBServiceDep, tenant_id: TenantDep,
                     force: bool = False) -> JSONResponse:
    await kb_service.delete_tag(tenant_id, require_id(kb_id, "Knowledge base"), require_id(tag_id, "Tag"),
                                  force=force)
    return ok(message="Tag deleted")
