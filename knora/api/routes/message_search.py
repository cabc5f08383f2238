"""``POST /messages/search``: the tenant's conversations searched by keyword (behaviour and shape in
``knora.services.sessions.message_search``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import SessionServiceDep, TenantDep, ViewerDep
from knora.api.envelope import ok
from knora.domain.errors import ValidationFailed
from knora.services.sessions.message_search import search_messages

router = APIRouter(tags=["messages"])


@router.post("/messages/search")
async def search(request: Request, session_service: SessionServiceDep, tenant_id: TenantDep,
                 viewer: ViewerDep) -> JSONResponse:
    body = await read_object(request)
    query, mode, limit, ids = body.get("query"), body.get("mode"), body.get("limit"), body.get("session_ids")
    if not isinstance(query, str):
        raise ValidationFailed("query: a string is required")
    if mode is not None and not isinstance(mode, str):
        raise ValidationFailed("mode: must be a string")
    if isinstance(limit, str) and limit.strip().lstrip("-").isdigit():  # WeKnora's clients may send "20"
        limit = int(limit)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise ValidationFailed("limit: must be an integer")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise ValidationFailed("session_ids: must be a list of strings")
    result = await search_messages(session_service.messages, tenant_id, query, mode=mode or "",
                                   limit=limit or 0, session_ids=ids or (), viewer=viewer)
    return ok(result)
