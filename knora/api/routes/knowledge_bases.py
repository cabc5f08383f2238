"""Knowledge bases (api §1.5 "Knowledge bases"): POST/GET /knowledge-bases, GET/PUT/DELETE /knowledge-bases/:id.

Also holds the small helpers the other store routers share (id checks, JSON bodies, record shapes), so each
router stays a thin parse → service → shape layer.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse

from knora.api.body import as_object
from knora.api.deps import KBServiceDep, TenantDep
from knora.api.envelope import ok
from knora.domain.common import is_uuid
from knora.domain.errors import NotFound
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.domain.models import ModelConfig
from knora.ports.store import KBStats

router = APIRouter(tags=["knowledge-bases"])

JsonBody = Body(default_factory=dict)


def require_id(value: str, what: str) -> str:
    """A malformed id cannot name anything: answer 404 like an unknown one (api §1.6 UUID ids)."""
    if not is_uuid(value):
        raise NotFound(f"{what} not found")
    return value


as_dict = as_object


def kb_json(kb: KnowledgeBase, stats: KBStats | None = None) -> dict[str, Any]:
    out = kb.model_dump(mode="json")
    out["config"] = {"chunking_config": out["chunking_config"], "indexing_strategy": out["indexing_strategy"],
                     "faq_config": out["faq_config"]}
    if stats is not None:
        out.update(stats.model_dump())
        out.update({"share_count": 0, "is_pinned": False, "pinned_at": None, "creator_name": ""})
    return out


def knowledge_json(k: Knowledge) -> dict[str, Any]:
    out = k.model_dump(mode="json")
    out.setdefault("summary_status", "none")
    out["storage_size"] = k.file_size
    out["folder_path"] = ""
    return out


def chunk_json(c: Chunk) -> dict[str, Any]:
    out = c.model_dump(mode="json")
    out["status"] = 2 if c.index_status == "ready" else 1
    return out


def model_json(m: ModelConfig) -> dict[str, Any]:
    out = m.model_dump(mode="json", exclude={"api_key"})
    out["credentials"] = {"api_key": {"configured": bool(m.api_key)}}
    return out


@router.post("/knowledge-bases", status_code=201)
async def create_kb(kb_service: KBServiceDep, tenant_id: TenantDep, body: Any = JsonBody) -> JSONResponse:
    kb = await kb_service.create(tenant_id, as_dict(body))
    return ok(kb_json(kb, KBStats()), status=201)


@router.get("/knowledge-bases")
async def list_kbs(kb_service: KBServiceDep, tenant_id: TenantDep) -> JSONResponse:
    kbs = await kb_service.list(tenant_id)
    stats = await kb_service.stats(tenant_id, [kb.id for kb in kbs])
    return ok([kb_json(kb, stats.get(kb.id)) for kb in kbs])


@router.get("/shared-knowledge-bases")
async def list_shared(__tenant_id: TenantDep) -> JSONResponse:
    """Knora has no organisations; the MCP server still needs this list to exist for name look-ups."""
    return ok([])


@router.get("/knowledge-bases/{kb_id}")
async def get_kb(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep) -> JSONResponse:
    kb = await kb_service.get(tenant_id, require_id(kb_id, "Knowledge base"))
    stats = await kb_service.stats(tenant_id, [kb.id])
    return ok(kb_json(kb, stats.get(kb.id)) | {"my_permission": "owner"})


@router.put("/knowledge-bases/{kb_id}")
async def update_kb(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep, body: Any = JsonBody) -> JSONResponse:
    kb = await kb_service.update(tenant_id, require_id(kb_id, "Knowledge base"), as_dict(body))
    return ok(kb_json(kb))


@router.delete("/knowledge-bases/{kb_id}")
async def delete_kb(kb_id: str, kb_service: KBServiceDep, tenant_id: TenantDep) -> JSONResponse:
    await kb_service.delete(tenant_id, require_id(kb_id, "Knowledge base"))
    return ok(message="Knowledge base deleted successfully")
