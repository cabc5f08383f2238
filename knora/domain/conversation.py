"""Sessions and messages — spec §7.1."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from knora.domain.common import new_id, utcnow


class Session(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant_id: int
    user_id: str = ""
    title: str = ""
    description: str = ""
    is_pinned: bool = False
    pinned_at: datetime | None = None
    last_request_state: dict[str, Any] = Field(default_factory=dict)
    source: str = "web"
    agent_id: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


def unowned(user_id: str) -> bool:
    """A session no signed-in user owns (made with an API key, the CLI, MCP or the OpenAI API): the
    tenant's."""
    return not user_id or user_id.startswith("system-")


class Viewer(NamedTuple):
    """Who looks at a tenant's sessions: a signed-in user (``user_id``) sees the sessions they made and the
    tenant's unowned ones; an API key (``user_id`` None) sees the unowned ones only. A user's sessions are
    private: other members, admins and keys included, do not see them."""

    user_id: str | None

    def sees(self, session_user_id: str) -> bool:
        return unowned(session_user_id) or (self.user_id is not None and session_user_id == self.user_id)


class Message(BaseModel):
    id: str = Field(default_factory=new_id)
    session_id: str
    tenant_id: int
    request_id: str = ""
    role: str  # user | assistant
    content: str = ""
    rendered_content: str = ""  # never serialised to clients
    knowledge_references: list[dict[str, Any]] = Field(default_factory=list)
    agent_steps: list[dict[str, Any]] = Field(default_factory=list)
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
    images: list[dict[str, Any]] = Field(default_factory=list)
    is_completed: bool = False
    is_fallback: bool = False
    agent_duration_ms: int = 0
    channel: str = "web"
    agent_id: str = ""
    model_id: str = ""
    debug: dict[str, Any] = Field(default_factory=dict)  # Knora: stage timings and what each stage kept
    # the user's like/dislike of an answer (``POST /messages/:sid/:mid/feedback``): "" (none), like, dislike
    feedback_rating: str = ""
    feedback_reason: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class HistoryMessage(NamedTuple):
    """What the next turn's history reads of a message (a plain tuple: every turn loads up to 20 of them)."""

    request_id: str
    role: str
    content: str
    images: list[dict[str, Any]]
    knowledge_references: list[dict[str, Any]]
    created_at: datetime
