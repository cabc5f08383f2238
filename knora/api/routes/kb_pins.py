"""``PUT /knowledge-bases/:id/pin``: pins the knowledge base, or unpins a pinned one (WeKnora's toggle), and
answers the knowledge base with ``is_pinned`` and ``pinned_at``, as ``GET /knowledge-bases`` then lists it.
Pins are kept per tenant (``knowledge_base_pins``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.api.deps import KBServiceDep, ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.envelope import Envelope
from knora.api.schemas.knowledge_bases import KnowledgeBaseOut
from knora.api.serializers import kb_json, require_id
from knora.domain.errors import NotFound

router = APIRouter(tags=["knowledge-bases"])


@router.put("/knowledge-bases/{kb_id}/pin", response_model=Envelope[KnowledgeBaseOut])
async def toggle_pin(kb_id: str, kb_service: KBServiceDep, s: ServicesDep,
                     tenant_id: TenantDep) -> JSONResponse:
    kb = await kb_service.get(tenant_id, require_id(kb_id, "Knowledge base"))
    toggled = await s.repos.pins.toggle(tenant_id, kb.id)
    if toggled is None:  # deleted meanwhile
        raise NotFound("Knowledge base not found")
    pinned, pinned_at = toggled
    stats = await kb_service.stats(tenant_id, [kb.id])
    return ok(kb_json(kb, stats.get(kb.id), pinned_at),
              message="Knowledge base pinned" if pinned else "Knowledge base unpinned")
