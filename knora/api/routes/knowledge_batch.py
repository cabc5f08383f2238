"""The document list's batch routes and the one-document edits beyond ``PUT /knowledge/:id`` (WeKnora's
``RegisterKnowledgeRoutes``): ``GET /knowledge/search``, ``POST /knowledge/batch-delete``,
``POST /knowledge/batch-reparse``, ``PUT /knowledge/tags``, ``PUT /knowledge/manual/:id`` and
``POST /knowledge/:id/cancel-parse``.

Mounted before ``knora.api.routes.knowledge``: ``/knowledge/search`` and ``/knowledge/tags`` would otherwise
be taken by ``/knowledge/{knowledge_id}``. The behaviour lives in ``knora.services.ingest.batch``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.knowledge import KnowledgeOut
from knora.api.schemas.knowledge_batch import (
    BatchDeleteOut,
    BatchKnowledgeRequest,
    BatchReparseOut,
    KnowledgeSearchOut,
    KnowledgeTagBatchRequest,
    TagBatchOut,
    UpdateManualRequest,
)
from knora.api.serializers import knowledge_json, require_id
from knora.domain.common import is_uuid
from knora.domain.errors import BadRequest, NotFound
from knora.services.ingest.batch import KnowledgeBatchService
from knora.services.ingest.process_config import parse_process_config

router = APIRouter(tags=["knowledge"])


async def _batch(s: ServicesDep) -> KnowledgeBatchService:
    return KnowledgeBatchService(s.ingest_service)


BatchDep = Annotated[KnowledgeBatchService, Depends(_batch)]


def _kb_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest("kb_id is required")
    return require_id(value.strip(), "Knowledge base")


def _ids(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest("ids must be a list of knowledge ids")
    for kid in value:
        if not is_uuid(kid):
            raise NotFound(f"Knowledge {kid} not found in this knowledge base")
    return list(value)


@router.get("/knowledge/search", response_model=KnowledgeSearchOut)
async def search_knowledge(batch: BatchDep, tenant_id: TenantDep, keyword: str = "", query: str = "",
                           offset: int = Query(0, ge=0, le=10_000_000), limit: int = Query(20, ge=1, le=100),
                           file_types: str = "", recent: bool = False) -> JSONResponse:
    """Documents of every knowledge base of the tenant by title or file name (``query`` is WeKnora's other
    name for ``keyword``); with ``recent=true`` and no keyword, the newest documents."""
    text = (keyword or query).strip()
    if not text and not recent:
        raise BadRequest("missing search keyword: pass ?keyword=... or ?query=...")
    found = await batch.search(tenant_id, text, [t.strip() for t in file_types.split(",")],
                               offset=offset, limit=limit)
    return ok([knowledge_json(k) for k in found.items], has_more=found.has_more, total=found.total)


@router.post("/knowledge/batch-delete", response_model=Envelope[BatchDeleteOut],
             openapi_extra=request_body(BatchKnowledgeRequest))
async def batch_delete(request: Request, batch: BatchDep, tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, BatchKnowledgeRequest)
    done = await batch.delete(tenant_id, _kb_id(b.kb_id), _ids(b.ids))
    return ok({"task_id": done.task_id, "deleted_count": done.count, "matched_count": done.count,
               "excluded_count": 0}, message="Batch delete task submitted")


@router.post("/knowledge/batch-reparse", response_model=Envelope[BatchReparseOut],
             openapi_extra=request_body(BatchKnowledgeRequest))
async def batch_reparse(request: Request, batch: BatchDep, tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, BatchKnowledgeRequest)
    overrides = parse_process_config(b.process_config)
    done = await batch.reparse(tenant_id, _kb_id(b.kb_id), _ids(b.ids), process_config=overrides)
    return ok({"task_id": done.task_id, "reparse_count": done.count, "matched_count": done.count,
               "excluded_count": 0}, message="Batch reparse task submitted")


@router.put("/knowledge/tags", response_model=Envelope[TagBatchOut],
            openapi_extra=request_body(KnowledgeTagBatchRequest))
async def batch_tags(request: Request, batch: BatchDep, tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, KnowledgeTagBatchRequest)
    if not isinstance(b.updates, dict):
        raise BadRequest("updates must be an object of knowledge id → list of tag ids")
    updates: dict[str, list[str]] = {}
    for kid, tags in b.updates.items():
        if tags is None:
            tags = []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise BadRequest(f"updates[{kid!r}] must be a list of tag ids")
        updates[require_id(kid, f"Knowledge {kid}")] = tags
    kb_id = _kb_id(b.kb_id) if isinstance(b.kb_id, str) and b.kb_id.strip() else None
    count = await batch.set_tags(tenant_id, updates, kb_id)
    return ok({"updated_count": count, "matched_count": count, "excluded_count": 0})


@router.put("/knowledge/manual/{knowledge_id}", response_model=Envelope[KnowledgeOut],
            openapi_extra=request_body(UpdateManualRequest))
async def update_manual(knowledge_id: str, request: Request, batch: BatchDep,
                        tenant_id: TenantDep) -> JSONResponse:
    require_id(knowledge_id, "Knowledge")
    b = await read_body(request, UpdateManualRequest)
    if not isinstance(b.content, str):
        raise BadRequest("content is required")
    if b.title is not None and not isinstance(b.title, str):
        raise BadRequest("title must be a string")
    status = str(b.status or "publish")
    status = "publish" if status == "published" else status
    if status not in ("draft", "publish"):
        raise BadRequest("status must be 'draft' or 'publish'")
    title = b.title if isinstance(b.title, str) else None
    k = await batch.update_manual(tenant_id, knowledge_id, title=title, content=b.content, status=status)
    return ok(knowledge_json(k))


@router.post("/knowledge/{knowledge_id}/cancel-parse", response_model=Envelope[KnowledgeOut])
async def cancel_parse(knowledge_id: str, batch: BatchDep, tenant_id: TenantDep) -> JSONResponse:
    k = await batch.cancel_parse(tenant_id, require_id(knowledge_id, "Knowledge"))
    return ok(knowledge_json(k), message="Knowledge parse cancelled")
