"""``filter_top_k`` (spec §2.14): deterministic order (score, knowledge id, chunk type, index, id), then
``rerank_top_k`` of the first non-empty of merge/rerank/search results."""

from __future__ import annotations

from collections.abc import Sequence

from knora.ports.turn import TurnContext
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import sort_deterministically


class FilterTopK:
    def activation_events(self) -> Sequence[EventType]:
        return (EventType.FILTER_TOP_K,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if not cm.needs_retrieval:
            return await next()
        st, k = cm.state, cm.request.rerank_top_k
        for name in ("merge_result", "rerank_result", "search_result"):
            results = getattr(st, name)
            if results:
                ordered = sort_deterministically(results)
                setattr(st, name, ordered[:k] if k > 0 else ordered)
                cm.note("filter_top_k", source=name, kept=len(getattr(st, name)))
                break
        return await next()
