"""One question asked as a chat turn by a caller that is not the SSE API (``knora ask``, the MCP ``ask``).

It is the same turn as the web UI's: a session (new, or the one named), the message pair, the stream log
and the stop signal, so the turn shows up in the UI's history too. ``collect_answer`` follows the turn's
log to its end, for a caller that wants the whole answer at once instead of the frames.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from knora.domain.conversation import Viewer
from knora.domain.stream import TERMINAL_TYPES, ResponseType
from knora.ports.stream_log import StreamLog
from knora.services.sessions.service import SessionService
from knora.services.streaming.intake import ChatBody
from knora.services.streaming.service import ChatService, StartedTurn


@dataclass(frozen=True)
class Question:
    query: str
    knowledge_base_ids: list[str]
    session_id: str | None = None  # continue this session; None = a new one
    agent_id: str = ""  # an agent runs the turn (``agent`` mode); "" = the quick-answer pipeline
    web_search: bool = False
    citations: bool = True
    channel: str = "api"  # the session's source and the messages' channel
    viewer: Viewer = Viewer(None)  # who asks: a signed-in user's new session is theirs; others' are unknown


async def start_question(sessions: SessionService, chat: ChatService, tenant_id: int,
                         q: Question) -> StartedTurn:
    """Starts the turn (raises ``AppError`` for an unknown session, an empty or too long query …)."""
    if q.session_id:
        await sessions.check_visible(tenant_id, q.session_id, q.viewer)
        session = await sessions.get(tenant_id, q.session_id)
    else:
        session = await sessions.create(tenant_id, source=q.channel, user_id=q.viewer.user_id or "")
    body = ChatBody(query=q.query, knowledge_base_ids=q.knowledge_base_ids, agent_id=q.agent_id,
                    web_search_enabled=q.web_search, citations_enabled=q.citations, channel=q.channel)
    return await chat.start(tenant_id, session.id, body, str(uuid.uuid4()),
                            "agent" if q.agent_id else "knowledge")


@dataclass
class CollectedAnswer:
    text: str = ""  # the answer with public citation tags (``<kb …/>``, ``<web …/>``)
    references: list[dict[str, Any]] = field(default_factory=list)  # SearchResult dicts of the turn
    errors: list[str] = field(default_factory=list)
    stopped: bool = False


async def collect_answer(log: StreamLog, turn: StartedTurn) -> CollectedAnswer:
    """The turn's answer once it has ended (complete or stop)."""
    out = CollectedAnswer()
    parts: list[str] = []
    async for item in log.follow(turn.session_id, turn.assistant_message_id):
        if item is None:
            continue
        if item.type == ResponseType.ANSWER:
            parts.append(item.content)
        elif item.type == ResponseType.REFERENCES:
            out.references.extend(item.data.get("references") or [])
        elif item.type == ResponseType.ERROR and item.content:
            out.errors.append(item.content)
        elif item.type in TERMINAL_TYPES:
            out.stopped = item.type == ResponseType.STOP
            break
    out.text = "".join(parts)
    return out
