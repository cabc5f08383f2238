"""Chat (api §1.5 "Chat and search", §2): knowledge-chat and agent-chat stream SSE; stop; continue-stream.

Errors found before streaming are JSON (the envelope; WeKnora's bare shapes for stop and continue-stream).
The response only reads the turn's stream log: a client that leaves ends the response, never the turn.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from knora.api.deps import ChatServiceDep, RequestIdDep, ServicesDep, SettingsDep, StreamLogDep, TenantDep
from knora.domain.common import is_uuid
from knora.domain.errors import AppError, BadRequest, NotFound, ValidationFailed
from knora.root import Services
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.service import WireError
from knora.services.streaming.sse import stream_frames

router = APIRouter(tags=["chat"])

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def _resource_mode(value: str | None) -> None:
    if value not in (None, "", "handle", "public"):
        raise BadRequest("resource_urls must be handle or public")


async def _chat_body(request: Request, limit: int) -> ChatBody:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise AppError(f"Request body too large (max {limit} bytes)", status=413, code=1000)
    raw = await request.body()
    if len(raw) > limit:
        raise AppError(f"Request body too large (max {limit} bytes)", status=413, code=1000)
    try:
        data = json.loads(raw) if raw.strip() else None
    except ValueError as exc:
        raise BadRequest("Malformed JSON body") from exc
    if not isinstance(data, dict):
        raise BadRequest("The request body must be a JSON object with a query")
    try:
        return ChatBody.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValidationFailed(msg or "Invalid request") from exc


async def _chat(mode: str, session_id: str, request: Request, s: Services, tenant_id: int, request_id: str,
                resource_urls: str | None) -> StreamingResponse:
    _resource_mode(resource_urls)
    if not is_uuid(session_id):
        raise NotFound("Session not found")
    body = await _chat_body(request, s.settings.max_chat_body_bytes)
    turn = await s.chat_service.start(tenant_id, session_id, body, request_id, mode)
    frames = stream_frames(s.stream_log, session_id, turn.assistant_message_id, request_id, live=True,
                           wait_for_title=turn.wants_title, keepalive=s.settings.sse_keepalive_seconds)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("/knowledge-chat/{session_id}")
async def knowledge_chat(session_id: str, request: Request, s: ServicesDep, tenant_id: TenantDep,
                         request_id: RequestIdDep, resource_urls: str | None = None) -> StreamingResponse:
    return await _chat("knowledge", session_id, request, s, tenant_id, request_id, resource_urls)


@router.post("/agent-chat/{session_id}")
async def agent_chat(session_id: str, request: Request, s: ServicesDep, tenant_id: TenantDep,
                     request_id: RequestIdDep, resource_urls: str | None = None) -> StreamingResponse:
    return await _chat("agent", session_id, request, s, tenant_id, request_id, resource_urls)


@router.post("/sessions/{session_id}/stop", response_model=None)
async def stop(session_id: str, request: Request, chat_service: ChatServiceDep,
               tenant_id: TenantDep) -> JSONResponse:
    raw = await request.body()
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = {}
    message_id = data.get("message_id") if isinstance(data, dict) else None
    if not isinstance(message_id, str) or not message_id.strip():
        return JSONResponse({"error": "message_id is required"}, status_code=400)
    if not is_uuid(session_id):
        return JSONResponse({"error": "Session not found"}, status_code=404)
    if not is_uuid(message_id):
        return JSONResponse({"error": "Message not found"}, status_code=404)
    try:
        message = await chat_service.stop(tenant_id, session_id, message_id)
    except WireError as exc:
        return JSONResponse(exc.body, status_code=exc.status)
    return JSONResponse({"success": True, "message": message})


@router.get("/sessions/continue-stream/{session_id}", response_model=None)
async def continue_stream(session_id: str, request: Request, chat_service: ChatServiceDep,
                          stream_log: StreamLogDep, settings: SettingsDep, tenant_id: TenantDep,
                          message_id: str = "", offset: str | None = None,
                          resource_urls: str | None = None) -> StreamingResponse | JSONResponse:
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
    try:
        message = await chat_service.resume_target(tenant_id, session_id, message_id if is_uuid(message_id)
                                                     else ("" if not message_id else "-"))
    except WireError as exc:
        return JSONResponse(exc.body, status_code=exc.status)
    frames = stream_frames(stream_log, session_id, message.id, message.request_id, after=after,
                           keepalive=settings.sse_keepalive_seconds)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)
