"""A chunk's earlier contents: ``GET /chunks/:knowledge_id/:chunk_id/revisions`` (newest first) and
``POST /chunks/:knowledge_id/:chunk_id/revert`` (``{revision, expected_revision}``), over
``knora.services.ingest.chunk_edit``. Every content edit through ``PUT /chunks/:kid/:id`` keeps the
content it replaces."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import ChunkServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.chunk_revisions import ChunkRevisionOut, RevertChunkRequest
from knora.api.schemas.chunks import ChunkOut
from knora.api.schemas.envelope import Envelope
from knora.api.serializers import chunk_json, require_id
from knora.domain.errors import BadRequest

router = APIRouter(tags=["chunks"])


def _int(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"{name} must be a non-negative integer")
    return value


@router.get("/chunks/{knowledge_id}/{chunk_id}/revisions", response_model=Envelope[list[ChunkRevisionOut]])
async def list_revisions(knowledge_id: str, chunk_id: str, chunk_service: ChunkServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    revs = await chunk_service.revisions(tenant_id, require_id(knowledge_id, "Knowledge"),
                                         require_id(chunk_id, "Chunk"))
    return ok([{**r.model_dump(mode="json"), "editor_id": ""} for r in revs])


@router.post("/chunks/{knowledge_id}/{chunk_id}/revert", response_model=Envelope[ChunkOut],
             openapi_extra=request_body(RevertChunkRequest))
async def revert_chunk(knowledge_id: str, chunk_id: str, request: Request, chunk_service: ChunkServiceDep,
                       tenant_id: TenantDep) -> JSONResponse:
    b = await read_body(request, RevertChunkRequest)
    revision = _int(b.revision, "revision")
    if revision is None:
        raise BadRequest("revision is required")
    chunk = await chunk_service.revert(tenant_id, require_id(knowledge_id, "Knowledge"),
                                       require_id(chunk_id, "Chunk"), revision,
                                       expected_revision=_int(b.expected_revision, "expected_revision"))
    return ok(chunk_json(chunk))
