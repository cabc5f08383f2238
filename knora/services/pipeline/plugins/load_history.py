"""``load_history`` (spec §2.1): the last ``max_rounds`` complete (query, answer) pairs, oldest first.

The streaming service already loaded and paired the session's messages into ``TurnRequest.history``; this
stage applies WeKnora's rules to them: think blocks stripped from answers, only pairs with both sides
non-empty (the in-flight turn is excluded), newest ``max_rounds`` kept, chronological order.
"""

from __future__ import annotations

from collections.abc import Sequence

from knora.domain.think import drop_closed_think
from knora.ports.turn import HistoryTurn, TurnContext
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType


def select_history(turns: Sequence[HistoryTurn], max_rounds: int) -> list[HistoryTurn]:
    kept: list[HistoryTurn] = []
    for t in turns:
        answer = drop_closed_think(t.answer)
        if t.query and answer:
            kept.append(t.model_copy(update={"answer": answer}))
    # Stable sort by time descending keeps input order for equal/missing timestamps.
    indexed = list(enumerate(kept))
    indexed.sort(key=lambda p: (p[1].created_at or "", p[0]), reverse=True)
    newest = [t for _, t in indexed[:max_rounds]]
    newest.reverse()
    return newest


class LoadHistory:
    def activation_events(self) -> Sequence[EventType]:
        return (EventType.LOAD_HISTORY,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if cm.request.max_rounds > 0:
            cm.state.history = select_history(cm.request.history, cm.request.max_rounds)
            cm.note("load_history", rounds=len(cm.state.history))
        return await next()
