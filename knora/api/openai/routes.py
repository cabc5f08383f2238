"""The OpenAI-compatible API at ``/v1`` (docs/openai-api.md): ``GET /v1/models``, ``GET /v1/models/{id}``,
``POST /v1/chat/completions`` (streamed or not).

Authentication, tenants, the body limit and the request budgets are the rest of the API's; errors are
OpenAI's shape (``errors.py``). A completion is an unsaved turn over the client's messages, or — when
``X-Knora-Session-Id`` names a session of the tenant (``new`` creates one) — a stored turn of that session,
which then shows in its history; the response names the session and the answer's message in
``X-Knora-Session-Id`` / ``X-Knora-Message-Id``. A client that leaves stops the answer on either path.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from knora.api.body import read_json, request_body
from knora.api.deps import RequestIdDep, ServicesDep, TenantDep, ViewerDep
from knora.api.openai.errors import error_body, openai_fields
from knora.api.openai.render import CompletionRenderer
from knora.api.openai.schemas import ChatCompletionRequest, parse_request
from knora.api.openai.stream import collect_unless_gone, stream_chunks
from knora.domain.common import is_uuid
from knora.domain.conversation import Viewer
from knora.domain.errors import NotFound
from knora.root import Services
from knora.services.openai_api.conversation import ClientMessage, split_conversation
from knora.services.openai_api.models import AnswerTarget, AnswerTargets, ModelNotFound
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.unsaved import UnsavedTurn

router = APIRouter(tags=["openai"])

SESSION_HEADER = "X-Knora-Session-Id"
MESSAGE_HEADER = "X-Knora-Message-Id"
NEW_SESSION = "new"
SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
CLIENT_GONE = 499  # nobody reads it: the client closed the request (nginx's code)

_stops: set[asyncio.Task[Any]] = set()  # stop requests of stored turns whose client left, until they finish


def _model(t: AnswerTarget) -> dict[str, Any]:
    return {"id": t.id, "object": "model", "created": t.created, "owned_by": "knora", "name": t.name}


def _targets(s: Services) -> AnswerTargets:
    return AnswerTargets(s.kb_service, s.agent_service, s.shares)


async def _resolve(targets: AnswerTargets, tenant_id: int, model_id: str) -> AnswerTarget:
    try:
        return await targets.resolve(tenant_id, model_id)
    except ModelNotFound as exc:
        raise NotFound(exc.message, details=openai_fields("model_not_found", "model")) from exc


@router.get("/models")
async def list_models(tenant_id: TenantDep, s: ServicesDep) -> JSONResponse:
    targets = await _targets(s).list(tenant_id)
    return JSONResponse({"object": "list", "data": [_model(t) for t in targets]})


@router.get("/models/{model_id:path}")
async def get_model(model_id: str, tenant_id: TenantDep, s: ServicesDep) -> JSONResponse:
    return JSONResponse(_model(await _resolve(_targets(s), tenant_id, model_id)))


@router.post("/chat/completions", response_model=None, openapi_extra=request_body(ChatCompletionRequest))
async def chat_completions(request: Request, s: ServicesDep, tenant_id: TenantDep, viewer: ViewerDep,
                           request_id: RequestIdDep) -> Response:
    body = parse_request(await read_json(request))
    conversation = split_conversation([ClientMessage(m.role, m.text()) for m in body.messages])
    target = await _resolve(_targets(s), tenant_id, body.model)
    chat = ChatBody(query=conversation.query, knowledge_base_ids=target.knowledge_base_ids,
                    agent_id=target.agent_id, agent_enabled=bool(target.agent_id), channel="api")
    renderer = CompletionRenderer(body.model, conversation)
    session = request.headers.get(SESSION_HEADER, "").strip()
    if session:
        return await _stored(request, s, tenant_id, viewer, request_id, session, chat, target, body,
                             renderer)
    turn = await s.chat_service.start_unsaved(tenant_id, chat, request_id, target.mode, conversation.history)
    if body.stream:
        return StreamingResponse(stream_chunks(turn.events(s.settings.sse_keepalive_seconds), renderer,
                                               body.include_usage,
                                               lambda: _unsaved_usage(turn), turn.cancel),
                                 media_type="text/event-stream", headers=SSE_HEADERS)
    if not await collect_unless_gone(request, turn.events(), renderer, turn.cancel):
        return Response(status_code=CLIENT_GONE)
    done = turn.result
    answer = str(done.fields.get("content") or "") if done else "".join(renderer.content)
    refs = list(done.fields.get("knowledge_references") or []) if done else renderer.references
    return _completion(renderer, answer, refs, _unsaved_usage(turn))


def reported_usage(debug: dict[str, Any] | None) -> dict[str, int] | None:
    """The answering model's own token counts, as the turn's debug holds them, when it reported any."""
    usage = (debug or {}).get("usage")
    if not isinstance(usage, dict) or int(usage.get("prompt_tokens") or 0) <= 0:
        return None  # a model that counts no prompt (the extractive answerer counts characters) reported none
    prompt, completion = int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": int(usage.get("total_tokens") or prompt + completion)}


def _unsaved_usage(turn: UnsavedTurn) -> dict[str, int] | None:
    return reported_usage(turn.result.fields.get("debug") if turn.result else None)


def _completion(r: CompletionRenderer, answer: str, refs: list[dict[str, Any]],
                usage: dict[str, int] | None, headers: dict[str, str] | None = None) -> JSONResponse:
    if r.failed:
        return JSONResponse(error_body(502, "; ".join(r.errors), type_="server_error", code="answer_failed"),
                            status_code=502, headers=headers)
    return JSONResponse(r.completion(answer, refs, usage), headers=headers)


async def _stored(request: Request, s: Services, tenant_id: int, viewer: Viewer, request_id: str,
                  session: str, chat: ChatBody, target: AnswerTarget, body: ChatCompletionRequest,
                  renderer: CompletionRenderer) -> Response:
    """A stored turn of the named session: its history is the session's, not the client's messages. A
    signed-in user's session is theirs alone (``Viewer``), as over ``/api/v1``."""
    if session == NEW_SESSION:
        session = (await s.session_service.create(tenant_id, source="api", user_id=viewer.user_id or "")).id
    elif not is_uuid(session):
        raise NotFound("Session not found", details=openai_fields("session_not_found", SESSION_HEADER))
    try:
        await s.session_service.check_visible(tenant_id, session, viewer)
        turn = await s.chat_service.start(tenant_id, session, chat, request_id, target.mode)
    except NotFound as exc:
        raise NotFound(exc.message, details=openai_fields("session_not_found", SESSION_HEADER)) from exc
    mid = turn.assistant_message_id
    headers = {SESSION_HEADER: session, MESSAGE_HEADER: mid}

    def stop() -> None:
        task = asyncio.get_running_loop().create_task(s.chat_service.stop(tenant_id, session, mid))
        _stops.add(task)
        task.add_done_callback(_stops.discard)

    events: AsyncIterator[Any] = s.stream_log.follow(session, mid, heartbeat=s.settings.sse_keepalive_seconds)
    if body.stream:
        async def usage() -> dict[str, int] | None:  # saved with the message before ``complete`` is logged
            message = await s.session_service.get_message(tenant_id, mid)
            return reported_usage(message.debug if message is not None else None)

        return StreamingResponse(stream_chunks(events, renderer, body.include_usage, usage, stop),
                                 media_type="text/event-stream", headers={**SSE_HEADERS, **headers})
    if not await collect_unless_gone(request, events, renderer, stop):
        return Response(status_code=CLIENT_GONE)
    message = await s.session_service.get_message(tenant_id, mid)
    answer = message.content if message is not None else "".join(renderer.content)
    refs = list(message.knowledge_references or []) if message is not None else renderer.references
    return _completion(renderer, answer, refs, reported_usage(message.debug if message else None), headers)

