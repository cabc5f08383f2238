"""Sessions and messages as returned (``knora.services.sessions.views``): RFC 3339 times, lists never null."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from knora.api.schemas.wire import Bool, Obj, ObjList, RequestBody, Str, StrList


class SessionOut(BaseModel):
    id: str
    title: str
    description: str
    tenant_id: int
    user_id: str
    is_pinned: bool
    pinned_at: str | None
    last_request_state: dict[str, Any]
    source: str
    agent_id: str
    created_at: str | None
    updated_at: str | None
    deleted_at: None


class MessageOut(BaseModel):
    id: str
    session_id: str
    request_id: str
    content: str
    role: str
    knowledge_references: list[dict[str, Any]]
    agent_steps: list[Any]
    mentioned_items: list[Any]
    images: list[Any]
    attachments: list[Any]
    artifacts: list[Any]
    is_completed: bool
    is_fallback: bool
    agent_duration_ms: int
    channel: str
    agent_id: str
    model_id: str
    knowledge_id: str
    used_memories: list[Any]
    debug: dict[str, Any]
    feedback_rating: str = Field(description="the user's rating of an answer: '', 'like' or 'dislike'")
    feedback_reason: str = Field(description="the reason given with a dislike, else ''")
    created_at: str | None
    updated_at: str | None
    deleted_at: None


class CreateSessionRequest(RequestBody):
    title: Str = None
    description: Str = None
    source: Str = Field(None, description="ignored: the server sets it (web for the UI's bearer token, "
                                             "api for an X-API-Key caller)")
    agent_config: Obj = Field(None, description="only agent_config.agent_id is read")


class UpdateSessionRequest(RequestBody):
    title: Str = None
    description: Str = None


class BatchDeleteSessionsRequest(RequestBody):
    ids: StrList = None
    delete_all: Bool = None


class GenerateTitleRequest(RequestBody):
    messages: ObjList = None


class StopRequest(RequestBody):
    message_id: Str = Field(None, description="the assistant message of the turn to stop (required)")
