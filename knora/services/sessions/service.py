"""Sessions and messages (spec §7): CRUD, pinning, message paging, history for the next turn, titles.

The service is the only writer of sessions and messages; routes and the chat service go through it, so tenant
scoping is enforced in one place: another tenant's session is "not found".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from knora.domain.common import utcnow
from knora.domain.conversation import Message, Session, Viewer
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.domain.think import drop_closed_think
from knora.ports.chat import ChatMessage, ChatModel, ChatOptions
from knora.ports.conversation_store import MessageRepo, SessionRepo
from knora.ports.turn import HistoryTurn

log = logging.getLogger(__name__)

MAX_TITLE_RUNES = 100
FALLBACK_TITLE_RUNES = 30
DEFAULT_HISTORY_ROUNDS = 5
FEEDBACK_RATINGS = ("like", "dislike", "")
FEEDBACK_REASON_MAX = 2000

TITLE_PROMPT = (
    "Write a short title for a conversation that starts with the user's message below. Reply with the title "
    "only: at most 12 words (or 20 Chinese characters), no quotes, no punctuation at the end, in the same "
    "language as the message."
)

ChatModelGetter = Callable[[str | None, int], Awaitable[ChatModel | None]]


def fallback_title(query: str) -> str:
    """The first words of the question: what a title is when no generative model is configured."""
    text = " ".join(query.split())
    if len(text) <= FALLBACK_TITLE_RUNES:
        return text
    cut = text[:FALLBACK_TITLE_RUNES]
    if " " in cut[FALLBACK_TITLE_RUNES // 2:]:
        cut = cut[:cut.rfind(" ")]
    return cut.rstrip(" ,.;:，。；：") + "…"


def sanitize_title(raw: str) -> str:
    text = drop_closed_think(raw).strip()
    text = text.splitlines()[0].strip() if text else ""
    text = text.strip("\"'“”‘’「」《》*# ").strip()
    return text[:MAX_TITLE_RUNES]


class SessionService:
    def __init__(self, sessions: SessionRepo, messages: MessageRepo,
                 chat_model: ChatModelGetter | None = None) -> None:
        self.sessions = sessions
        self.messages = messages
        self._chat_model = chat_model

    # --- sessions -------------------------------------------------------------------------------------------
    async def create(self, tenant_id: int, *, title: str = "", description: str = "", source: str = "web",
                     agent_id: str = "", user_id: str = "") -> Session:
        session = Session(tenant_id=tenant_id, title=title[:MAX_TITLE_RUNES], description=description,
                          source=source or "web", agent_id=agent_id, user_id=user_id or f"system-{tenant_id}")
        return await self.sessions.create(session)

    async def get(self, tenant_id: int, session_id: str) -> Session:
        session = await self.sessions.get(tenant_id, session_id)
        if session is None:
            raise NotFound("Session not found")
        return session

    async def check_visible(self, tenant_id: int, session_id: str, viewer: Viewer) -> None:
        """NotFound when the session exists but is another user's (to the viewer it does not exist); an
        unknown id is left to the caller's own lookup."""
        session = await self.sessions.get(tenant_id, session_id)
        if session is not None and not viewer.sees(session.user_id):
            raise NotFound("Session not found")

    async def list_sessions(self, tenant_id: int, *, page: int, page_size: int, keyword: str | None = None,
                            source: str | None = None, agent_id: str | None = None,
                            viewer: Viewer | None = None) -> tuple[list[Session], int]:
        return await self.sessions.list(tenant_id, page=page, page_size=page_size, keyword=keyword,
                                        source=source, agent_id=agent_id, viewer=viewer)

    async def update(self, tenant_id: int, session_id: str, *, title: str | None = None,
                     description: str | None = None) -> Session:
        session = await self.get(tenant_id, session_id)
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title[:MAX_TITLE_RUNES]
        if description is not None:
            changes["description"] = description
        return await self.sessions.update(session.model_copy(update=changes))

    async def set_pinned(self, tenant_id: int, session_id: str, pinned: bool) -> Session:
        session = await self.get(tenant_id, session_id)
        return await self.sessions.update(session.model_copy(
            update={"is_pinned": pinned, "pinned_at": utcnow() if pinned else None}))

    async def set_last_request_state(self, tenant_id: int, session_id: str, state: dict[str, Any]) -> None:
        await self.sessions.update_fields(tenant_id, session_id, last_request_state=state)

    async def delete(self, tenant_id: int, session_id: str) -> None:
        if not await self.sessions.delete(tenant_id, [session_id]):
            raise NotFound("Session not found")

    async def delete_many(self, tenant_id: int, session_ids: Sequence[str],
                          viewer: Viewer | None = None) -> int:
        return await self.sessions.delete(tenant_id, session_ids, viewer)

    async def delete_all(self, tenant_id: int, viewer: Viewer | None = None) -> int:
        return await self.sessions.delete_all(tenant_id, viewer)

    # --- messages -------------------------------------------------------------------------------------------
    async def load_messages(self, tenant_id: int, session_id: str, *, limit: int = 20,
                            before: datetime | None = None) -> list[Message]:
        await self.get(tenant_id, session_id)
        return await self.messages.recent(session_id, limit, before)

    async def get_message(self, tenant_id: int, message_id: str) -> Message | None:
        return await self.messages.get(tenant_id, message_id)

    async def delete_message(self, tenant_id: int, session_id: str, message_id: str) -> None:
        await self.get(tenant_id, session_id)
        if not await self.messages.delete(session_id, message_id):
            raise NotFound("Message not found")

    async def set_feedback(self, tenant_id: int, session_id: str, message_id: str, rating: str,
                           reason: str = "") -> Message:
        """Records the user's like or dislike of an answer (``rating`` "" clears it): on the assistant message
        of ``session_id``, which must be the caller's tenant's (another's looks unknown). Sending again
        replaces the rating and reason."""
        if rating not in FEEDBACK_RATINGS:
            raise ValidationFailed("rating must be 'like' or 'dislike'")
        await self.get(tenant_id, session_id)
        message = await self.messages.get(tenant_id, message_id)
        if message is None or message.session_id != session_id:
            raise NotFound("Message not found")
        if message.role != "assistant":
            raise BadRequest("feedback is given on an answer (an assistant message)")
        reason = reason.strip() if rating == "dislike" else ""
        if len(reason) > FEEDBACK_REASON_MAX:
            raise ValidationFailed(f"reason: at most {FEEDBACK_REASON_MAX} characters")
        await self.messages.update_fields(message.id, feedback_rating=rating, feedback_reason=reason)
        return message.model_copy(update={"feedback_rating": rating, "feedback_reason": reason})

    async def clear_messages(self, tenant_id: int, session_id: str) -> int:
        await self.get(tenant_id, session_id)
        return await self.messages.clear(session_id)

    async def history(self, session_id: str, max_rounds: int = DEFAULT_HISTORY_ROUNDS,
                      exclude_request_id: str = "") -> list[HistoryTurn]:
        """Previous (query, answer) pairs for the next turn, oldest first (spec §2.1).

        Pairs are grouped by request id; only pairs where both sides are non-empty count (so the in-flight
        turn and a stopped turn without text are skipped, while a stopped turn with partial text is replayed,
        as WeKnora).
        """
        if max_rounds <= 0:
            return []
        rows = await self.messages.history(session_id, max_rounds * 2 + 10, exclude_request_id)
        turns: dict[str, dict[str, Any]] = {}
        for m in rows:
            turn = turns.setdefault(m.request_id, {"query": "", "answer": "", "references": [], "at": None})
            if m.role == "user":
                turn["query"] = m.content
                turn["at"] = m.created_at
                captions = [str(i.get("caption")) for i in m.images
                            if isinstance(i, dict) and i.get("caption")]
                if captions:
                    turn["query"] += "\n\n[用户上传图片内容]\n" + "\n".join(captions)
            elif m.role == "assistant":
                turn["answer"] = drop_closed_think(m.content)
                turn["references"] = m.knowledge_references
        complete = [t for t in turns.values() if t["query"].strip() and t["answer"].strip() and t["at"]]
        complete.sort(key=lambda t: t["at"], reverse=True)
        chosen = list(reversed(complete[:max_rounds]))
        return [HistoryTurn(query=t["query"], answer=t["answer"], references=t["references"],
                            created_at=t["at"].isoformat()) for t in chosen]

    # --- titles ---------------------------------------------------------------------------------------------
    async def generate_title(self, tenant_id: int, session_id: str, query: str,
                             model_id: str | None = None) -> str:
        """A title from the chat model, or the first words of the query when there is no generative model (the
        extractive answerer would only quote documents) or the model fails. Saved only if the session has
        none."""
        if not query.strip():
            raise BadRequest("no user message found")
        title = ""
        if self._chat_model is not None:
            try:
                model = await self._chat_model(model_id, tenant_id)
                if model is not None and not str(getattr(model, "model_id", "")).endswith("extractive"):
                    reply = await model.chat(
                        [ChatMessage(role="system", content=TITLE_PROMPT),
                         ChatMessage(role="user", content=query)],
                        ChatOptions(temperature=0.3, thinking=False, max_tokens=64))
                    title = sanitize_title(reply.content)
            except Exception:
                log.warning("title generation failed; using the query", exc_info=True)
        title = title or fallback_title(query)
        if not await self.sessions.set_title_if_empty(tenant_id, session_id, title):
            existing = await self.sessions.get(tenant_id, session_id)
            if existing is None:
                raise NotFound("Session not found")
            return existing.title or title
        return title
