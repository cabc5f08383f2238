"""The FAQ page's batch edits and export (WeKnora's ``PUT …/faq/entries/fields``,
``PUT …/faq/entries/tags``, ``GET …/faq/entries/export``), over the FAQ service
(``knora.services.retrieval.faq_batch``).

Registered before ``knora.api.routes.faq``, whose ``…/faq/entries/{entry_id}`` would otherwise take
``fields``, ``tags`` and ``export`` as an entry id. Answers are WeKnora's: ``{"success": true}`` for an
edit, a file for the export (``format=csv``, the default, or ``json``).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from knora.api.body import read_body, request_body
from knora.api.deps import FaqServiceDep, ServicesDep, TenantDep
from knora.api.serializers import require_id
from knora.services.retrieval import faq_batch
from knora.services.retrieval.faq_batch import FieldsBatch, TagBatch

router = APIRouter(tags=["faq"])


@router.put("/knowledge-bases/{kb_id}/faq/entries/fields", openapi_extra=request_body(FieldsBatch))
async def update_fields(kb_id: str, request: Request, faq: FaqServiceDep, services: ServicesDep,
                        tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, FieldsBatch)
    kb = require_id(kb_id, "Knowledge base")
    await faq_batch.update_fields(faq, services.repos.tags, tenant_id, kb, body)
    return JSONResponse({"success": True})


@router.put("/knowledge-bases/{kb_id}/faq/entries/tags", openapi_extra=request_body(TagBatch))
async def update_tags(kb_id: str, request: Request, faq: FaqServiceDep, services: ServicesDep,
                      tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, TagBatch)
    kb = require_id(kb_id, "Knowledge base")
    await faq_batch.update_tags(faq, services.repos.tags, tenant_id, kb, body)
    return JSONResponse({"success": True})


@router.get("/knowledge-bases/{kb_id}/faq/entries/export")
async def export_entries(kb_id: str, faq: FaqServiceDep, services: ServicesDep, tenant_id: TenantDep,
                         format: Literal["csv", "json"] = Query(default="csv")) -> Response:  # noqa: A002
    kb = require_id(kb_id, "Knowledge base")
    if format == "json":
        data = await faq_batch.export_json(faq, services.repos.tags, tenant_id, kb)
        return Response(data, media_type="application/json; charset=utf-8",
                        headers={"Content-Disposition": "attachment; filename=faq_export.json"})
    data = await faq_batch.export_csv(faq, services.repos.tags, tenant_id, kb)
    return Response(data, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": "attachment; filename=faq_export.csv"})
