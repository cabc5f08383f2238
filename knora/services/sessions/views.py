"""Wire shapes of sessions and messages (api §1.5): RFC 3339 times, ``[]`` not ``null``, no
rendered_content."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from knora.domain.common import rfc3339
from knora.domain.conversation import Message, Session


def session_json(s: Session) -> dict[str, Any]:
    return {
        "id": s.id, "title": s.title, "description": s.description, "tenant_id": s.tenant_id,
        "user_id": s.user_id, "is_pinned": s.is_pinned, "pinned_at": rfc3339(s.pinned_at),
        "last_request_state": s.last_request_state or {}, "source": s.source, "agent_id": s.agent_id,
        "created_at": rfc3339(s.created_at), "updated_at": rfc3339(s.updated_at), "deleted_at": None,
    }


def step_json(step: Any) -> Any:
    """An agent step as WeKnora's ``AgentStep`` (``timestamp`` a Go ``time.Time``): steps saved before
    issue 13 carry a unix-seconds ``timestamp``, shown as RFC 3339 (null if it is out of range)."""
    if not isinstance(step, dict):
        return step
    ts = step.get("timestamp")
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        return step
    try:
        when: str | None = rfc3339(datetime.fromtimestamp(ts, UTC))
    except (OverflowError, OSError, ValueError):
        when = None
    return {**step, "timestamp": when}


def message_json(m: Message) -> dict[str, Any]:
    return {
        "id": m.id, "session_id": m.session_id, "request_id": m.request_id, "content": m.content,
        "role": m.role, "knowledge_references": m.knowledge_references or [],
        "agent_steps": [step_json(step) for step in m.agent_steps or []],
        "mentioned_items": m.mentioned_items or [], "images": m.images or [], "attachments": [],
        "artifacts": [],
        "is_completed": m.is_completed, "is_fallback": m.is_fallback,
        "agent_duration_ms": m.agent_duration_ms,
        "channel": m.channel, "agent_id": m.agent_id, "model_id": m.model_id, "knowledge_id": "",
        "used_memories": [], "debug": m.debug or {},
        "feedback_rating": m.feedback_rating, "feedback_reason": m.feedback_reason,
        "created_at": rfc3339(m.created_at), "updated_at": rfc3339(m.updated_at), "deleted_at": None,
    }
