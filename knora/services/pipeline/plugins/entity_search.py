"""``entity_search`` (spec §2.8): chunks linked to the graph nodes whose names contain an extracted entity.

Graph hits get score 1.0 and match type ``graph``; only chunks not already in the results are loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from knora.domain.search import MatchType, SearchResult
from knora.ports.turn import TurnContext
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_SEARCH_NOTHING, PluginError
from knora.services.pipeline.framework import Next
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import remove_duplicate_results

log = logging.getLogger(__name__)


async def run_entity_search(deps: PipelineDeps, cm: ChatManage) -> PluginError | None:
    st, req = cm.state, cm.request
    kb_ids = st.entity_kb_ids or list(req.entity_kb_ids)
    reads = cm.reads_or(deps.reads)
    if not st.entity or not kb_ids or deps.graph_store is None or reads is None:
        return None
    knowledge_ids = list(req.knowledge_ids)
    try:
        graph = await deps.graph_store.search_nodes(req.tenant_id, kb_ids, st.entity,
                                                    knowledge_ids=knowledge_ids)
    except Exception as exc:  # noqa: BLE001 - spec: per-call errors are logged
        log.warning("graph search failed: %s", exc)
        return None
    st.graph_result = graph.as_dict()
    have = {r.id for r in st.search_result}
    wanted = list(dict.fromkeys(c for n in graph.nodes for c in n.chunk_ids if c not in have))
    if not wanted:
        return None if st.search_result else ERR_SEARCH_NOTHING
    chunks = [c for c in await reads.chunks(wanted) if c.tenant_id == req.tenant_id and c.is_enabled]
    docs = {k.id: k for k in await reads.knowledge(list({c.knowledge_id for c in chunks}))}
    order = {cid: i for i, cid in enumerate(wanted)}
    added: list[SearchResult] = []
    for c in sorted(chunks, key=lambda c: order[c.id]):
        k = docs.get(c.knowledge_id)
        added.append(SearchResult(
            id=c.id, content=c.content, knowledge_id=c.knowledge_id, chunk_index=c.chunk_index,
            knowledge_title=k.title if k else "", start_at=c.start_at, end_at=c.end_at, seq=c.chunk_index,
            score=1.0, match_type=MatchType.GRAPH, metadata=dict(k.metadata) if k else {},
            chunk_type=str(c.chunk_type), parent_chunk_id=c.parent_chunk_id or "",
            knowledge_filename=k.file_name if k else "", knowledge_source=k.source if k else "",
            knowledge_channel=k.channel if k else "", knowledge_base_id=c.knowledge_base_id,
            chunk_metadata=dict(c.metadata) or None))
    st.search_result = remove_duplicate_results([*st.search_result, *added])
    cm.note("entity_search", entities=len(st.entity), graph_hits=len(added))
    return None if st.search_result else ERR_SEARCH_NOTHING


class EntitySearch:
    def __init__(self, deps: PipelineDeps) -> None:
        self._deps = deps

    def activation_events(self) -> Sequence[EventType]:
        return (EventType.ENTITY_SEARCH,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        err = await run_entity_search(self._deps, cm)
        return err if err is not None else await next()
