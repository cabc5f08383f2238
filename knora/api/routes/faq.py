"""FAQ entries of FAQ knowledge bases (weknora-api "FAQ entries"); entry ids are integers (WeKnora seq
ids)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import FaqServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope, NestedPage
from knora.api.schemas.faq import DeleteBody, FaqDeleted, FaqEntryOut, FaqSearchBody, FaqTask, ImportBody
from knora.api.serializers import MAX_PAGE, results_json
from knora.domain.search import SearchResult
from knora.services.retrieval.faq import FaqEntryIn

router = APIRouter(tags=["faq"])


@router.get("/knowledge-bases/{kb_id}/faq/entries",
            response_model=Envelope[NestedPage[FaqEntryOut]])
async def list_entries(kb_id: str, faq_service: FaqServiceDep, tenant_id: TenantDep, page: int = 1,
                       page_size: int = 20,
                       keyword: str = "", tag_id: str | None = None) -> JSONResponse:
    page = min(max(page, 1), MAX_PAGE)
    items, total = await faq_service.list_entries(tenant_id, kb_id, page=page, page_size=page_size,
                                                  keyword=keyword,
                                            tag_id=tag_id or None)
    return ok({"data": items, "total": total, "page": page, "page_size": min(max(page_size, 1),
                                                                                     1000)})


@router.post("/knowledge-bases/{kb_id}/faq/entries", response_model=Envelope[FaqTask],
             openapi_extra=request_body(ImportBody))
async def import_entries(kb_id: str, request: Request, faq_service: FaqServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, ImportBody)
    task_id = await faq_service.start_import(tenant_id, kb_id, body.entries, mode=body.mode,
                                               knowledge_id=body.knowledge_id, dry_run=body.dry_run)
    return ok({"task_id": task_id})


@router.get("/faq/import/progress/{task_id}")
async def import_progress(task_id: str, faq_service: FaqServiceDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(faq_service.progress(tenant_id, task_id))


@router.post("/knowledge-bases/{kb_id}/faq/entry", response_model=Envelope[FaqEntryOut],
             openapi_extra=request_body(FaqEntryIn))
async def create_entry(kb_id: str, request: Request, faq_service: FaqServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    entry = await read_body(request, FaqEntryIn)
    return ok(await faq_service.create(tenant_id, kb_id, entry))


@router.get("/knowledge-bases/{kb_id}/faq/entries/{entry_id}",
            response_model=Envelope[FaqEntryOut])
async def get_entry(kb_id: str, entry_id: int, faq_service: FaqServiceDep,
                    tenant_id: TenantDep) -> JSONResponse:
    return ok(await faq_service.get(tenant_id, kb_id, entry_id))


@router.put("/knowledge-bases/{kb_id}/faq/entries/{entry_id}", response_model=Envelope[FaqEntryOut],
            openapi_extra=request_body(FaqEntryIn))
async def update_entry(kb_id: str, entry_id: int, request: Request, faq_service: FaqServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    entry = await read_body(request, FaqEntryIn)
    return ok(await faq_service.update(tenant_id, kb_id, entry_id, entry))


@router.delete("/knowledge-bases/{kb_id}/faq/entries", response_model=Envelope[FaqDeleted],
               openapi_extra=request_body(DeleteBody))
async def delete_entries(kb_id: str, request: Request, faq_service: FaqServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, DeleteBody)
    n = await faq_service.delete(tenant_id, kb_id, body.ids)
    return ok({"deleted": n})


@router.post("/knowledge-bases/{kb_id}/faq/search", response_model=Envelope[list[SearchResult]],
             openapi_extra=request_body(FaqSearchBody))
async def faq_search(kb_id: str, request: Request, faq_service: FaqServiceDep,
                     tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, FaqSearchBody)
    results = await faq_service.search(
        tenant_id, kb_id, body.query_text, vector_threshold=body.vector_threshold,
        match_count=body.match_count,
        first_priority_tag_ids=[str(t) for t in body.first_priority_tag_ids],
        second_priority_tag_ids=[str(t) for t in body.second_priority_tag_ids],
        only_recommended=body.only_recommended)
    return ok(results_json(results))
