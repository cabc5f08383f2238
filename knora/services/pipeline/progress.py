"""Progress windows of the quick-answer timeline (spec §1.12), as TOOL_CALL / TOOL_RESULT bus events.

Two windows: ``query_understand`` around that stage, and one ``knowledge_search`` window from the first
retrieval stage to the last one (search → rerank → merge → top-k), closed on every path — success, "nothing
found", failure and cancellation. Tool-call ids carry the ``ragpipe-`` prefix so agent history replay skips
them.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from knora.domain.search import SearchResult
from knora.domain.stream import BusEvent
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.state import ChatManage, EventType
from knora.services.pipeline.textutil import is_web

PIPELINE_TOOL_CALL_PREFIX = "ragpipe-"
RETRIEVAL_STAGES = (EventType.CHUNK_SEARCH_PARALLEL, EventType.CHUNK_SEARCH, EventType.CHUNK_RERANK,
                    EventType.CHUNK_MERGE, EventType.FILTER_TOP_K)


def is_retrieval_stage(cm: ChatManage, stage: EventType) -> bool:
    if stage in RETRIEVAL_STAGES:
        return cm.needs_retrieval
    if stage == EventType.WEB_FETCH:
        return cm.request.web_search_enabled
    if stage == EventType.DATA_ANALYSIS:
        return cm.request.data_analysis_enabled and cm.needs_retrieval
    return False


def last_retrieval_stage(stages: list[EventType]) -> EventType | None:
    """Computed before the loop (intent still empty ⇒ retrieval assumed), as WeKnora does."""
    members = set(RETRIEVAL_STAGES) | {EventType.WEB_FETCH, EventType.DATA_ANALYSIS}
    found = [s for s in stages if s in members]
    return found[-1] if found else None


class _Window:
    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        self.name = name
        self.id = f"{PIPELINE_TOOL_CALL_PREFIX}{uuid.uuid4()}"
        self.arguments = arguments
        self.started = time.perf_counter()


class Progress:
    def __init__(self, cm: ChatManage) -> None:
        self._cm = cm
        self.query_window: _Window | None = None
        self.retrieval_window: _Window | None = None

    async def _open(self, name: str, arguments: dict[str, Any]) -> _Window:
        w = _Window(name, arguments)
        await self._cm.ctx.bus.emit(BusEvent.TOOL_CALL, {"tool_call_id": w.id, "tool_name": name,
                                                         "arguments": arguments}, event_id=w.id)
        return w

    async def _close(self, w: _Window, *, success: bool, output: str, error: str = "",
                     data: dict[str, Any] | None = None) -> None:
        ms = int((time.perf_counter() - w.started) * 1000)
        await self._cm.ctx.bus.emit(BusEvent.TOOL_RESULT, {
            "tool_call_id": w.id, "tool_name": w.name, "success": success, "output": output, "error": error,
            "duration_ms": ms, "data": data or {}}, event_id=w.id)

    # --- query understanding --------------------------------------------------------------------------------
    async def begin_query_understand(self) -> None:
        req = self._cm.request
        if not (req.enable_rewrite or req.images) or self.query_window is not None:
            return
        args: dict[str, Any] = {"query": req.query}
        if req.images:
            args["has_images"] = True
        self.query_window = await self._open("query_understand", args)

    async def end_query_understand(self, err: PluginError | None) -> None:
        if self.query_window is None:
            return
        w, self.query_window = self.query_window, None
        note = self._cm.state.image_note  # Knora: images not described are said so where the step shows
        output = (note or "已完成问题理解") if err is None else ""
        await self._close(w, success=err is None, output=output, error=err.message if err else "",
                          data={"image_note": note} if note else None)

    # --- retrieval ------------------------------------------------------------------------------------------
    def _source(self) -> str:
        req = self._cm.request
        if req.has_kb_scope and req.web_search_enabled:
            return "mixed"
        return "web" if req.web_search_enabled and not req.has_kb_scope else "knowledge"

    async def begin_retrieval(self) -> None:
        if self.retrieval_window is None:
            self.retrieval_window = await self._open(
                "knowledge_search", {"search_source": self._source(), "query": self._cm.search_query})

    async def end_retrieval(self, err: PluginError | None) -> None:
        if self.retrieval_window is None:
            return
        w, self.retrieval_window = self.retrieval_window, None
        st = self._cm.state
        results: list[SearchResult] = st.merge_result or st.rerank_result or st.search_result
        count = len(results)
        web = sum(1 for r in results if is_web(r))
        candidates = 0
        nothing = err is not None and err.is_search_nothing
        if nothing:
            candidates, count, web = count, 0, 0
        source = self._source()
        if count > 0:
            source = "mixed" if 0 < web < count else ("web" if web == count else "knowledge")
        if count > 0:
            output = f"检索到 {count} 条相关内容"
        elif candidates > 0:
            output = f"命中 {candidates} 条候选，相关性不足，未用于回答"
        else:
            output = "未检索到相关内容"
        success = err is None or nothing
        await self._close(w, success=success, output=output,
                          error="" if success else (err.message if err else ""),
                          data={"count": count, "doc_count": count - web, "web_count": web,
                                "search_source": source, "candidate_count": candidates})

    async def close_all(self, err: PluginError | None = None) -> None:
        await self.end_query_understand(err)
        await self.end_retrieval(err)
