"""Chat (api §1.5 "Chat and search", §2): knowledge-chat and agent-chat stream SSE; stop; continue-stream.

Errors found before streaming are the envelope, stop and continue-stream included: WeKnora answers those two
with a bare ``{"error": "…"}``, but its web UI reads an error as ``error`` if a string, else ``error.message``
(frontend/src/utils/request.ts), so the envelope reads the same there and Knora keeps one error shape (issue
20, item 3). Bodies are read by ``knora.api.body`` (depth-limited, one reader); their size is bounded while
they arrive by ``knora.api.body_limit``.

The response only reads the turn's stream log: a client that leaves ends the response, never the turn.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from knora.api.body import parse, read_json, read_object, request_body
from knora.api.deps import ChatServiceDep, RequestIdDep, ServicesDep, SettingsDep, StreamLogDep, TenantDep
from knora.api.schemas.conversations import StopRequest
from knora.domain.common import is_uuid
from knora.domain.errors import BadRequest, NotFound
from knora.root import Services
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.sse import stream_frames

router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def _resource_mode(value: str | None) -> None:
    if value not in (None, "", "handle", "public"):
        raise BadRequest("resource_urls must be handle or public")


async def _chat_body(request: Request) -> ChatBody:
    data = await read_json(request)
    if not isinstance(data, dict):
        raise BadRequest("The request body must be a JSON object with a query")
    return parse(ChatBody, data)


async def _chat(mode: str, session_id: str, request: Request, s: Services, tenant_id: int, request_id: str,
                resource_urls: str | None) -> StreamingResponse:
    _resource_mode(resource_urls)
    if not is_uuid(session_id):
        raise NotFound("Session not found")
    body = await _chat_body(request)
    turn = await s.chat_service.start(tenant_id, session_id, body, request_id, mode)
    frames = stream_frames(s.stream_log, session_id, turn.assistant_message_id, request_id, live=True,
                           wait_for_title=turn.wants_title, keepalive=s.settings.sse_keepalive_seconds)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("/knowledge-chat/{session_id}", openapi_extra=request_body(ChatBody))
async def knowledge_chat(session_id: str, request: Request, s: ServicesDep, tenant_id: TenantDep,
                         request_id: RequestIdDep, resource_urls: str | None = None) -> StreamingResponse:
    return await _chat("knowledge", session_id, request, s, tenant_id, request_id, resource_urls)


@router.post("/agent-chat/{session_id}", openapi_extra=request_body(ChatBody))
async def agent_chat(session_id: str, request: Request, s: ServicesDep, tenant_id: TenantDep,
                     request_id: RequestIdDep, resource_urls: str | None = None) -> StreamingResponse:
    return await _chat("agent", session_id, request, s, tenant_id, request_id, resource_urls)


@router.post("/sessions/{session_id}/stop", response_model=None, openapi_extra=request_body(StopRequest))
async def stop(session_id: str, request: Request, chat_service: ChatServiceDep,
               tenant_id: TenantDep) -> JSONResponse:
    message_id = (await read_object(request)).get("message_id")
    if not isinstance(message_id, str) or not message_id.strip():
        raise BadRequest("message_id is required")
    if not is_uuid(session_id):
        raise NotFound("Session not found")
    if not is_uuid(message_id):
        raise NotFound("Message not found")
    message = await chat_service.stop(tenant_id, session_id, message_id)
    return JSONResponse({"success": True, "message": message})


@router.get("/sessions/continue-stream/{session_id}", response_model=None)
async def continue_stream(session_id: str, request: Request, chat_service: ChatServiceDep,
                          stream_log: StreamLogDep, settings: SettingsDep, tenant_id: TenantDep,
                          message_id: str = "", offset: str | None = None,
                          resource_urls: str | None = None) -> StreamingResponse:
    """Replays the turn's log from the start, or after a cursor (``Last-Event-ID`` = the seq of the last frame
    received, or ``?offset=`` = how many frames were received), then follows it live until complete or
    stop."""
    _resource_mode(resource_urls)
    if not is_uuid(session_id):
        raise NotFound("Session not found")
    after = -1
    cursor = request.headers.get("last-event-id")
    try:
        if cursor not in (None, ""):
            after = int(str(cursor))
        elif offset not in (None, ""):
            after = int(str(offset)) - 1
    except ValueError as exc:
        raise BadRequest("Last-Event-ID and offset must be integers") from exc
    if after < -1:
        raise BadRequest("Last-Event-ID and offset must not be negative")
    message = await chat_service.resume_target(tenant_id, session_id, message_id if is_uuid(message_id)
                                               else ("" if not message_id else "-"))
    frames = stream_frames(stream_log, session_id, message.id, message.request_id, after=after,
                           keepalive=settings.sse_keepalive_seconds)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)
