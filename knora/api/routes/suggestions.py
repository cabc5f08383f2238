"""Suggested follow-up questions under an answer (``knora.services.sessions.suggestions``).

WeKnora's web UI reads ``/sessions/:sid/messages/:mid/suggestions`` after each answer (GET: the stored set,
POST ``{regenerate}``: make sure there is one, or a new one) and reports what the user did with them on
``/sessions/:sid/suggestion-events``. ``/messages/:sid/:mid/suggestions`` answers the same, for clients that
address messages under ``/messages``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import SessionServiceDep, SuggestionsDep, TenantDep
from knora.api.envelope import ok
from knora.api.routes.sessions import session_id_or_404
from knora.api.serializers import require_id
from knora.domain.errors import ValidationFailed

router = APIRouter(tags=["sessions"])

EVENT_TYPES = ("impression", "click", "dismiss")


@router.get("/sessions/{session_id}/messages/{message_id}/suggestions")
@router.get("/messages/{session_id}/{message_id}/suggestions")
async def get_suggestions(session_id: str, message_id: str, suggestions: SuggestionsDep,
                          tenant_id: TenantDep) -> JSONResponse:
    got = await suggestions.get(tenant_id, session_id_or_404(session_id), require_id(message_id, "Message"))
    return ok(got)


@router.post("/sessions/{session_id}/messages/{message_id}/suggestions")
@router.post("/messages/{session_id}/{message_id}/suggestions")
async def ensure_suggestions(session_id: str, message_id: str, request: Request, suggestions: SuggestionsDep,
                             tenant_id: TenantDep) -> JSONResponse:
    regenerate = (await read_object(request)).get("regenerate", False)
    if not isinstance(regenerate, bool):
        raise ValidationFailed("regenerate: must be a boolean")
    got = await suggestions.ensure(tenant_id, session_id_or_404(session_id),
                                   require_id(message_id, "Message"), regenerate=regenerate)
    return ok(got)


@router.post("/sessions/{session_id}/suggestion-events")
async def suggestion_event(session_id: str, request: Request, session_service: SessionServiceDep,
                           tenant_id: TenantDep) -> JSONResponse:
    """Accepted and checked; Knora keeps no suggestion analytics, so nothing is stored."""
    await session_service.get(tenant_id, session_id_or_404(session_id))
    body = await read_object(request)
    if body.get("event_type") not in EVENT_TYPES:
        raise ValidationFailed(f"event_type must be one of {', '.join(EVENT_TYPES)}")
    if not isinstance(body.get("suggestion_set_id"), str) or not body["suggestion_set_id"]:
        raise ValidationFailed("suggestion_set_id is required")
    return ok()
