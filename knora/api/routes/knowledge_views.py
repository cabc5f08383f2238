"""What WeKnora's document page reads besides the document itself: ``GET /knowledge/:id/preview`` (the
original with its content type, shown inline), ``GET /knowledge/:id/spans`` and ``…/stages`` (the processing
timeline) and ``GET /knowledge-bases/:id/knowledge/folders`` (the folder tree). The behaviour is in
``knora.services.ingest.views``."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from knora.api.deps import BlobsDep, IngestServiceDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.serializers import require_id
from knora.domain.errors import NotFound
from knora.ports.store import KnowledgeFilter
from knora.services.ingest import views
from knora.services.ingest.images import MIME_TYPES, image_key

router = APIRouter(tags=["knowledge"])


@router.get("/knowledge/{knowledge_id}/preview")
async def preview_knowledge(knowledge_id: str, ingest_service: IngestServiceDep, blobs: BlobsDep,
                            s: ServicesDep, tenant_id: TenantDep) -> Response:
    k = await ingest_service.get(tenant_id, require_id(knowledge_id, "Knowledge"))
    got = await views.preview(k, blobs, s.repos.chunks)
    # inline: the UI renders it in its preview pane. An uploaded HTML or SVG file opened directly must not run
    # as a page of this origin (where the UI keeps its key): the sandbox policy gives it a unique origin and
    # no scripts; nosniff keeps the declared type the one used.
    return Response(got.data, media_type=got.content_type,
                    headers={"Content-Disposition": f"inline; filename*=UTF-8''{quote(got.file_name)}",
                             "Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"})


@router.get("/knowledge/{knowledge_id}/images/{name}")
async def knowledge_image(knowledge_id: str, name: str, ingest_service: IngestServiceDep, blobs: BlobsDep,
                          tenant_id: TenantDep) -> Response:
    """An image of a document (``image_info.url``), for the chunk viewer; another tenant's is a 404."""
    k = await ingest_service.get(tenant_id, require_id(knowledge_id, "Knowledge"))
    stem, _, ext = name.partition(".")
    if not stem.isdigit() or ext not in MIME_TYPES:
        raise NotFound("Image not found")
    try:
        data = await blobs.get(image_key(k, name))
    except (KeyError, ValueError) as exc:
        raise NotFound("Image not found") from exc
    return Response(data, media_type=MIME_TYPES[ext],
                    headers={"Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff",
                             "Content-Security-Policy": "sandbox"})


@router.get("/knowledge/{knowledge_id}/spans")
@router.get("/knowledge/{knowledge_id}/stages")
async def knowledge_spans(knowledge_id: str, ingest_service: IngestServiceDep,
                          tenant_id: TenantDep) -> JSONResponse:
    k = await ingest_service.get(tenant_id, require_id(knowledge_id, "Knowledge"))
    return ok(views.spans(k))


@router.get("/knowledge-bases/{kb_id}/knowledge/folders")
async def knowledge_folders(kb_id: str, ingest_service: IngestServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    listed = await ingest_service.list_documents(tenant_id, require_id(kb_id, "Knowledge base"), page=1,
                                                 page_size=1, filters=KnowledgeFilter())
    return ok(views.folder_tree(listed.total))
