"""Wiki boost (spec §2.11): after the rest of the ``chunk_rerank`` chain, ×1.3 for ``wiki_page`` results when
a KB in scope has wiki enabled, then a stable re-sort. It calls ``next()`` first, so it post-processes."""

from __future__ import annotations

from collections.abc import Sequence

from knora.ports.turn import TurnContext
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType

WIKI_BOOST = 1.3


class WikiBoost:
    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHUNK_RERANK,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        err = await next()
        if err is not None:
            return err
        results = cm.state.rerank_result
        if not cm.request.wiki_kb_ids or not any(r.chunk_type == "wiki_page" for r in results):
            return None
        boosted = [r.model_copy(update={"score": r.score * WIKI_BOOST}) if r.chunk_type == "wiki_page" else r
                   for r in results]
        cm.state.rerank_result = sorted(boosted, key=lambda r: -r.score)
        cm.note("wiki_boost", boosted=sum(r.chunk_type == "wiki_page" for r in results))
        return None
