"""Sessions (api §1.5 "Sessions"): CRUD, batch delete, clear, pin, title. Stop and continue-stream are in
chat.py."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import PrincipalDep, SessionServiceDep, TenantDep, ViewerDep
from knora.api.envelope import ok
from knora.api.schemas.conversations import (
    BatchDeleteSessionsRequest,
    CreateSessionRequest,
    GenerateTitleRequest,
    SessionOut,
    UpdateSessionRequest,
)
from knora.api.schemas.envelope import Done, Envelope, PageEnvelope
from knora.api.serializers import MAX_PAGE
from knora.domain.common import is_uuid
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.services.sessions.views import session_json

router = APIRouter(tags=["sessions"])


def session_id_or_404(session_id: str) -> str:
    if not is_uuid(session_id):
        raise NotFound("Session not found")
    return session_id


def source_of(request: Request) -> str:
    """The session's ``source`` bucket, set by the server from who asks, as WeKnora does
    (``internal/application/repository/session.go``): the web UI signs in and sends its token as a bearer, and
    its sessions are ``web`` (its sidebar lists ``source=web``); a caller with an API key (``X-API-Key``: the
    Go SDK, WeKnora's MCP server, scripts) makes ``api`` sessions, which the sidebar leaves out. A ``source``
    in the body is not read: WeKnora's handler does not read one either."""
    return "api" if request.headers.get("x-api-key", "").strip() else "web"


def _str(body: dict[str, object], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationFailed(f"{key}: must be a string")
    return value


@router.post("/sessions", status_code=201, response_model=Envelope[SessionOut],
             openapi_extra=request_body(CreateSessionRequest))
async def create_session(request: Request, session_service: SessionServiceDep,
                         principal: PrincipalDep) -> JSONResponse:
    """A signed-in user's session is theirs alone (``Viewer``); one made with an API key is the tenant's."""
    tenant_id = principal.tenant_id
    sent = await read_body(request, CreateSessionRequest)
    body = sent.sent()
    agent_cfg = sent.agent_config if isinstance(sent.agent_config, dict) else {}
    session = await session_service.create(
        tenant_id, title=_str(body, "title") or "", description=_str(body, "description") or "",
        source=source_of(request), agent_id=str(agent_cfg.get("agent_id") or ""),
        user_id=principal.user_id or "")
    return ok(session_json(session), status=201)


@router.get("/sessions", response_model=PageEnvelope[SessionOut])
async def list_sessions(session_service: SessionServiceDep, tenant_id: TenantDep, viewer: ViewerDep,
                        page: str = "1",
                        page_size: str = "20",
                        keyword: str | None = None, source: str | None = None,
                        agent_id: str | None = None) -> JSONResponse:
    try:
        p, size = int(page), int(page_size)
    except ValueError as exc:
        raise ValidationFailed("page and page_size must be integers") from exc
    if not 1 <= p <= MAX_PAGE or not 1 <= size <= 1000:
        raise ValidationFailed(f"page must be between 1 and {MAX_PAGE} and page_size between 1 and 1000")
    items, total = await session_service.list_sessions(tenant_id, page=p, page_size=size,
                                                       keyword=keyword or None,
                                                       source=source or None, agent_id=agent_id or None,
                                                       viewer=viewer)
    return ok([session_json(s) for s in items], total=total, page=p, page_size=size)


@router.delete("/sessions/batch", response_model=Done, openapi_extra=request_body(BatchDeleteSessionsRequest))
async def batch_delete(request: Request, session_service: SessionServiceDep, tenant_id: TenantDep,
                       viewer: ViewerDep) -> JSONResponse:
    body = (await read_body(request, BatchDeleteSessionsRequest)).sent()
    if body.get("delete_all") is True:
        n = await session_service.delete_all(tenant_id, viewer)  # what the caller sees, not others' sessions
        return ok(message=f"Deleted {n} sessions")
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids (a non-empty list of session ids) or delete_all:true is required")
    n = await session_service.delete_many(tenant_id, [i for i in ids if is_uuid(i)], viewer)
    return ok(message=f"Deleted {n} sessions")


@router.get("/sessions/{session_id}", response_model=Envelope[SessionOut])
async def get_session(session_id: str, session_service: SessionServiceDep,
                      tenant_id: TenantDep) -> JSONResponse:
    return ok(session_json(await session_service.get(tenant_id, session_id_or_404(session_id))))


@router.put("/sessions/{session_id}", response_model=Envelope[SessionOut],
            openapi_extra=request_body(UpdateSessionRequest))
async def update_session(session_id: str, request: Request, session_service: SessionServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    body = (await read_body(request, UpdateSessionRequest)).sent()
    session = await session_service.update(tenant_id, session_id_or_404(session_id), title=_str(body,
                                                                                                "title"),
                                             description=_str(body, "description"))
    return ok(session_json(session))


@router.delete("/sessions/{session_id}", response_model=Done)
async def delete_session(session_id: str, session_service: SessionServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    await session_service.delete(tenant_id, session_id_or_404(session_id))
    return ok(message="Session deleted successfully")


@router.delete("/sessions/{session_id}/messages", response_model=Done)
async def clear_messages(session_id: str, session_service: SessionServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    n = await session_service.clear_messages(tenant_id, session_id_or_404(session_id))
    return ok(message=f"Deleted {n} messages")


@router.post("/sessions/{session_id}/pin", response_model=Envelope[SessionOut])
async def pin(session_id: str, session_service: SessionServiceDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(session_json(await session_service.set_pinned(tenant_id, session_id_or_404(session_id), True)))


@router.delete("/sessions/{session_id}/pin", response_model=Envelope[SessionOut])
async def unpin(session_id: str, session_service: SessionServiceDep, tenant_id: TenantDep) -> JSONResponse:
    return ok(session_json(await session_service.set_pinned(tenant_id, session_id_or_404(session_id), False)))


@router.post("/sessions/{session_id}/generate_title", response_model=Envelope[str],
             openapi_extra=request_body(GenerateTitleRequest))
async def generate_title(session_id: str, request: Request, session_service: SessionServiceDep,
                         tenant_id: TenantDep) -> JSONResponse:
    body = (await read_body(request, GenerateTitleRequest)).sent()
    session = await session_service.get(tenant_id, session_id_or_404(session_id))
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise BadRequest("messages is required")
    if session.title:
        return ok(session.title)
    query = next((str(m.get("content") or "") for m in messages
                  if isinstance(m, dict) and m.get("role") == "user" and m.get("content")), "")
    if not query:
        first = [m for m in await session_service.load_messages(tenant_id, session.id, limit=1000)
                 if m.role == "user" and m.content]
        query = first[0].content if first else ""
    return ok(await session_service.generate_title(tenant_id, session.id, query))
