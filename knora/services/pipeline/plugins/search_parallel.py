"""``chunk_search_parallel`` (spec §2.5): chunk search and entity search concurrently on clones, merged and
de-duplicated (id, then content signature). Empty → the chunk-search error if any, else ErrSearchNothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_SEARCH_NOTHING, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.plugins.chunk_search import run_chunk_search
from knora.services.pipeline.plugins.entity_search import run_entity_search
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import remove_duplicate_results

log = logging.getLogger(__name__)


class ChunkSearchParallel:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.CHUNK_SEARCH_PARALLEL,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if not cm.needs_retrieval:
            return await next()
        chunk_cm, entity_cm = cm.clone(), cm.clone()
        tasks = [run_chunk_search(self._deps, chunk_cm)]
        if cm.state.entity:
            tasks.append(run_entity_search(self._deps, entity_cm))
        outcomes = await asyncio.gather(*tasks)
        chunk_err = outcomes[0] if outcomes[0] is not None and not outcomes[0].is_search_nothing else None
        merged = remove_duplicate_results([*chunk_cm.state.search_result, *entity_cm.state.search_result])
        cm.state.graph_result = entity_cm.state.graph_result
        for clone in (chunk_cm, entity_cm):
            for stage, info in clone.state.stage_info.items():
                cm.note(stage, **info)
        cm.state.search_result = merged
        cm.note("chunk_search_parallel", kept=len(merged))
        if not merged:
            return chunk_err or ERR_SEARCH_NOTHING
        if chunk_err is not None:
            log.warning("chunk search failed, using entity results: %s", chunk_err.message)
        return await next()
