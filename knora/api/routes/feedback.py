"""An answer's like/dislike: ``POST``/``DELETE /messages/:sessionId/:messageId/feedback``.

WeKnora's chat page posts ``{rating: "like"|"dislike", reason}`` under an answer (sending again replaces the
rating and reason) and deletes it to take the rating back. Knora keeps the rating on the message itself
(``feedback_rating``, ``feedback_reason``, answered with every message of ``/messages/:sid/load``); it does
not re-weight chunks from it as WeKnora's chunk-feedback statistics do. The rules are in
``knora.services.sessions.service.SessionService.set_feedback``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import SessionServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.routes.sessions import session_id_or_404
from knora.api.serializers import require_id
from knora.domain.conversation import Message
from knora.domain.errors import ValidationFailed

router = APIRouter(tags=["messages"])


def _feedback_json(m: Message) -> dict[str, str]:
    return {"session_id": m.session_id, "message_id": m.id, "rating": m.feedback_rating,
            "reason": m.feedback_reason}


@router.post("/messages/{session_id}/{message_id}/feedback")
async def submit_feedback(session_id: str, message_id: str, request: Request,
                          session_service: SessionServiceDep, tenant_id: TenantDep) -> JSONResponse:
    sid, mid = session_id_or_404(session_id), require_id(message_id, "Message")
    body = await read_object(request)
    rating, reason = body.get("rating"), body.get("reason")
    if rating not in ("like", "dislike"):
        raise ValidationFailed("rating must be 'like' or 'dislike'")
    if reason is not None and not isinstance(reason, str):
        raise ValidationFailed("reason must be a string")
    m = await session_service.set_feedback(tenant_id, sid, mid, str(rating), reason or "")
    return ok(_feedback_json(m), message="Feedback recorded")


@router.delete("/messages/{session_id}/{message_id}/feedback")
async def cancel_feedback(session_id: str, message_id: str, session_service: SessionServiceDep,
                          tenant_id: TenantDep) -> JSONResponse:
    sid, mid = session_id_or_404(session_id), require_id(message_id, "Message")
    m = await session_service.set_feedback(tenant_id, sid, mid, "")
    return ok(_feedback_json(m), message="Feedback removed")
