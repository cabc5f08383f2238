"""The chat page's reads of features Knora has not: skill artifacts (files an agent generated in a sandbox)
and steering (messages queued into a running turn).

WeKnora's chat page reads ``GET /sessions/:id/artifacts``, ``GET /sessions/:id/messages/:mid/artifacts`` and
``GET /sessions/:id/steer`` on load. Knora runs no sandbox that keeps output files and cannot queue a message
into a running turn, so each answers WeKnora's empty result (``data: []``; steer's ``items: []``, which
WeKnora answers when no turn is running). The session (and message) must be the caller's tenant's, else 404,
as WeKnora checks ownership first. The writes (``POST …/steer``, ``…/inject``, ``DELETE …/steer/:id``) and the
artifact download stay unrouted: there is nothing to create or fetch.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora.api.deps import SessionServiceDep, TenantDep
from knora.api.routes.sessions import session_id_or_404
from knora.domain.common import is_uuid
from knora.domain.errors import NotFound

router = APIRouter(tags=["sessions"])


@router.get("/sessions/{session_id}/artifacts")
async def session_artifacts(session_id: str, sessions: SessionServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    await sessions.get(tenant_id, session_id_or_404(session_id))
    return JSONResponse({"success": True, "data": []})


@router.get("/sessions/{session_id}/messages/{message_id}/artifacts")
async def message_artifacts(session_id: str, message_id: str, sessions: SessionServiceDep,
                            tenant_id: TenantDep) -> JSONResponse:
    await sessions.get(tenant_id, session_id_or_404(session_id))
    message = await sessions.get_message(tenant_id, message_id) if is_uuid(message_id) else None
    if message is None or message.session_id != session_id:
        raise NotFound("Message not found")
    return JSONResponse({"success": True, "data": []})


@router.get("/sessions/{session_id}/steer")
async def steer_queue(session_id: str, sessions: SessionServiceDep, tenant_id: TenantDep) -> JSONResponse:
    await sessions.get(tenant_id, session_id_or_404(session_id))
    return JSONResponse({"success": True, "items": []})
