"""``web_fetch`` (spec §2.12): replace the content of the top web results with the fetched page text
(≤ 8000 bytes + "\n...(truncated)"). Failures keep the snippet."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from knora.domain.search import SearchResult
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import is_web, truncate_utf8, utf8_len

log = logging.getLogger(__name__)
MAX_CONTENT_BYTES = 8000


class WebFetch:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.WEB_FETCH,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        req, st = cm.request, cm.state
        fetch = self._deps.fetch_page
        if not (req.web_fetch_enabled and req.web_search_enabled) or fetch is None:
            return await next()
        # WeKnora reads only the rerank result, so without a rerank model nothing is ever fetched (departure
        # D3).
        source_name = "rerank_result" if st.rerank_result else "search_result"
        source: list[SearchResult] = getattr(st, source_name)
        picked = [i for i, r in enumerate(source) if is_web(r)][: max(0, req.web_fetch_top_n)]

        async def one(i: int) -> tuple[int, str]:
            try:
                return i, await fetch(source[i].id)
            except Exception as exc:  # noqa: BLE001 - spec: failures are logged, content unchanged
                log.info("web_fetch %s failed: %s", source[i].id, exc)
                return i, ""

        fetched = 0
        for i, text in await asyncio.gather(*(one(i) for i in picked)):
            if text.strip():
                body = text if utf8_len(text) <= MAX_CONTENT_BYTES else truncate_utf8(text,
                                                                                      MAX_CONTENT_BYTES) + \
                    "\n...(truncated)"
                source[i] = source[i].model_copy(update={"content": body,
                                                         "metadata": {**source[i].metadata,
                                                                      "fetched": "true"}})
                fetched += 1
        cm.note("web_fetch", fetched=fetched, tried=len(picked))
        return await next()
