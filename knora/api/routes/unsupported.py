"""Features WeKnora has and Knora has not, answered as WeKnora answers a workspace that does not use them.

WeKnora's web UI reads some of these on load of its main pages (the organisation list and pending invitations
in the sidebar and header, the favourites of the knowledge-base and agent lists, the channel and vector store
panels of the settings and agent pages). Knora has no
organisations (tenants share with each other directly) or per-user favourites; it has no IM or embed
channels and no registry of external
vector stores. Each read answers the empty result in WeKnora's shape, so no page throws, and
``/system/capabilities`` (``knora.api.routes.system``) marks the feature unsupported, so the UI hides the
menus that would create one. Writes are not routed: WeKnora does not register the routes of a feature it lacks
either (its capability reason is ``route_not_registered``), and a 404 is the honest answer to "create an
organisation" here.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.api.deps import TenantDep
from knora.api.envelope import ok
from knora.domain.errors import ValidationFailed

router = APIRouter(tags=["unsupported"])

# WeKnora's favourite resource types (``service.ErrFavoriteInvalidType`` for any other)
FAVORITE_TYPES = ("kb", "agent")


@router.get("/organizations")
async def list_organizations(_tenant_id: TenantDep) -> JSONResponse:
    return ok({"organizations": [], "total": 0,
               "resource_counts": {"knowledge_bases": {"by_organization": {}},
                                   "agents": {"by_organization": {}}}})


@router.get("/user/favorites")
async def list_favorites(_tenant_id: TenantDep, type: str = "") -> JSONResponse:  # noqa: A002 - WeKnora's name
    if type and type not in FAVORITE_TYPES:
        raise ValidationFailed("Invalid request parameters")
    return ok([])


@router.get("/im-channels")
async def list_im_channels(_tenant_id: TenantDep) -> JSONResponse:
    return ok([])


@router.get("/embed-channels")
async def list_embed_channels(_tenant_id: TenantDep) -> JSONResponse:
    return ok([])


@router.get("/vector-stores")
async def list_vector_stores(_tenant_id: TenantDep) -> JSONResponse:
    """Knora's vector index is its retrieval engine (``/system/info``: ``vector_store_engine``), chosen by the
    operator's settings; there are no stored external vector stores to list."""
    return ok([])


@router.get("/vector-stores/types")
async def vector_store_types(_tenant_id: TenantDep) -> JSONResponse:
    return ok([])


@router.get("/agents/{agent_id}/im-channels")
async def agent_im_channels(agent_id: str, _tenant_id: TenantDep) -> JSONResponse:
    return ok([])


@router.get("/agents/{agent_id}/embed-channels")
async def agent_embed_channels(agent_id: str, _tenant_id: TenantDep) -> JSONResponse:
    return ok([])
