"""Wires the streaming area: stream log, stop signals, sessions and chat turns (``c.stream_log``,
``c.stop_signals``, ``c.session_service``, ``c.chat_service``).

Runners and agents are resolved lazily, at request time: the agent area is wired after this one, and tests may
replace ``c.quick_answer`` on a started container.
"""

from __future__ import annotations

from typing import Any

from knora.adapters.db.repos._batch import GroupCommit
from knora.adapters.db.repos.messages import SqlMessageRepo
from knora.adapters.db.repos.sessions import SqlSessionRepo
from knora.adapters.stream.registry import build
from knora.domain.models import AgentConfig
from knora.ports.chat import ChatModel
from knora.services.sessions.service import SessionService
from knora.services.streaming.pacing import DeltaPacer
from knora.services.streaming.service import ChatService
from knora.services.streaming.turn import TurnRunner


async def wire(c: Any) -> None:
    stream_log, stop_signals = build(c.settings)
    c.stream_log, c.stop_signals = stream_log, stop_signals
    c.on_close(stream_log.close)
    c.on_close(stop_signals.close)

    async def chat_model(model_id: str | None, tenant_id: int) -> ChatModel | None:
        try:
            models = c.chat_models
        except AttributeError:
            return None  # the pipeline area is not wired: titles fall back to the query
        return await models.get(model_id or None, tenant_id=tenant_id)  # type: ignore[no-any-return]

    writer = GroupCommit(c.sessions)  # one writer for the turns' message and session writes (group commits)
    c.on_close(writer.close)
    messages = SqlMessageRepo(c.sessions, writer)
    c.session_service = SessionService(SqlSessionRepo(c.sessions, writer), messages, chat_model)

    def runners(kind: str) -> TurnRunner | None:
        name = "smart_reasoning" if kind == "smart" else "quick_answer"
        try:
            return getattr(c, name)  # type: ignore[no-any-return]
        except AttributeError:
            return None

    async def agents(tenant_id: int, agent_id: str) -> AgentConfig | None:
        try:
            service = c.agent_service
        except AttributeError:
            return None
        return await service.get(tenant_id, agent_id)  # type: ignore[no-any-return]

    c.chat_service = ChatService(c.session_service, stream_log, stop_signals, runners, agents,
                                 max_query_chars=c.settings.max_query_chars,
                                 pacer=DeltaPacer(c.settings.stream_frame_budget,
                                                  c.settings.stream_max_hold_ms / 1000))
    c.on_close(c.chat_service.close)
    if c.settings.stream_log == "memory":
        await c.chat_service.close_interrupted(c.settings.stream_ttl_seconds)
