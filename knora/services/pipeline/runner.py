"""The quick-answer orchestrator (spec §1.7 ``KnowledgeQA`` + ``KnowledgeQAByEvent``): a ``TurnRunner``.

Per turn: resolve defaults/agent/targets, assemble the stage list (pure chat without KB and web search), then
for each stage — open progress windows, emit the references right before the answer stream, trigger the
stage, time it (STAGE_TIMING + ``ctx.timings``), close windows, and only then look at the outcome:
cancellation first (a stopped turn never falls back), "nothing found" → fallback, other errors → failure.
"""

from __future__ import annotations

import time
from typing import Any, cast

from knora import prompts
from knora.domain.stream import BusEvent
from knora.ports.search_store import SearchStore
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest
from knora.services.pipeline.assembly import build_request, build_stages
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import PluginError
from knora.services.pipeline.fallback import handle_fallback
from knora.services.pipeline.framework import EventManager, Plugin, build_manager
from knora.services.pipeline.plugins.chat_completion import uuid8
from knora.services.pipeline.plugins.merge import MIN_CONTEXT
from knora.services.pipeline.plugins.registration import default_plugins
from knora.services.pipeline.progress import Progress, is_retrieval_stage, last_retrieval_stage
from knora.services.pipeline.state import ChatManage, EventType, PipelineState
from knora.services.retrieval.turn_reads import TurnReads

_MAIN_RESULT = {EventType.CHUNK_SEARCH_PARALLEL: "search_result", EventType.CHUNK_SEARCH: "search_result",
                EventType.CHUNK_RERANK: "rerank_result", EventType.CHUNK_MERGE: "merge_result",
                EventType.FILTER_TOP_K: "merge_result", EventType.DATA_ANALYSIS: "merge_result"}


class PipelineFailed(RuntimeError):
    """A stage failed (any PluginError but "nothing found"); the streaming service turns it into an error
    event."""

    def __init__(self, stage: str, error: PluginError) -> None:
        super().__init__(error.message)
        self.stage = stage
        self.error = error


class QuickAnswerRunner:
    def __init__(self, deps: PipelineDeps, plugins: list[Plugin] | None = None) -> None:
        self.deps = deps
        self.manager: EventManager = build_manager(plugins if plugins is not None else default_plugins(deps))

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        started = time.perf_counter()
        reads = TurnReads(cast(SearchStore, self.deps.reads), tenant_id=req.resource_tenant_id,
                          neighbours_below=MIN_CONTEXT) \
            if self.deps.reads is not None else None
        pr, _kbs = await build_request(self.deps, req, reads)
        stages = build_stages(pr)
        cm = ChatManage(request=pr, state=PipelineState(rewrite_query=req.query), ctx=ctx, reads=reads)
        if EventType.CHUNK_SEARCH_PARALLEL not in stages:
            self._prepare_pure_chat(cm)
        ctx.timings["setup"] = round((time.perf_counter() - started) * 1000, 3)
        await self.run_stages(cm, stages)
        ctx.timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        return self.outcome(cm)

    @staticmethod
    def _prepare_pure_chat(cm: ChatManage) -> None:
        """No knowledge base, no web search: the question goes straight to the model. The KB answering prompt
        ("answer only from the retrieved information") would refuse everything here, so unless an agent set
        its own prompt the general-conversation prompt is used (docs/quick-answer.md D7)."""
        req, st = cm.request, cm.state
        base = req.summary.prompt
        if base == prompts.content("default_kb"):
            base = prompts.content("pure_chat")
        st.system_prompt = prompts.render(base, {"query": req.query, "contexts": "",
                                                 "language": req.language})
        st.user_content = req.query

    async def run_stages(self, cm: ChatManage, stages: list[EventType]) -> None:
        ctx = cm.ctx
        progress = Progress(cm)
        last = last_retrieval_stage(stages)
        try:
            for stage in stages:
                if stage == EventType.QUERY_UNDERSTAND:
                    await progress.begin_query_understand()
                if is_retrieval_stage(cm, stage):
                    await progress.begin_retrieval()
                if stage == EventType.CHAT_COMPLETION_STREAM and cm.state.merge_result:
                    await ctx.bus.emit(BusEvent.REFERENCES, {
                        "references": [r.model_dump(mode="json") for r in cm.state.merge_result]},
                        event_id=f"{uuid8()}-references")
                t0 = time.perf_counter()
                err = await self.manager.trigger(cm, stage)
                ms = round((time.perf_counter() - t0) * 1000, 3)
                ctx.timings[str(stage)] = ms
                await ctx.bus.emit(BusEvent.STAGE_TIMING, self._timing_payload(cm, stage, ms, err))
                if stage == EventType.QUERY_UNDERSTAND:
                    await progress.end_query_understand(err)
                if stage == last or err is not None:
                    await progress.end_retrieval(err)
                if cm.cancelled:
                    return  # checked before "nothing found": a stopped search must not trigger the fallback
                if err is None:
                    continue
                if err.is_search_nothing:
                    await handle_fallback(self.deps, cm)
                    return
                raise PipelineFailed(str(stage), err)
        finally:
            await progress.close_all()

    @staticmethod
    def _timing_payload(cm: ChatManage, stage: EventType, ms: float,
                        err: PluginError | None) -> dict[str, Any]:
        payload: dict[str, Any] = {"stage": str(stage), "ms": ms}
        attr = _MAIN_RESULT.get(stage)
        if attr is not None:
            payload["kept"] = len(getattr(cm.state, attr))
        payload.update({k: v for k, v in cm.state.stage_info.get(str(stage), {}).items() if k != "kept"})
        if stage == EventType.QUERY_UNDERSTAND:
            payload.update(rewrite=cm.state.rewrite_query, intent=cm.state.intent)
        if err is not None:
            payload["error"] = err.error_type
        return payload

    @staticmethod
    def outcome(cm: ChatManage) -> TurnOutcome:
        st, req = cm.state, cm.request
        rendered = st.user_content if st.rendered_contexts and st.user_content != req.query else ""
        return TurnOutcome(
            answer=st.chat_response, references=[] if st.is_fallback else list(st.merge_result),
            is_fallback=st.is_fallback, rendered_content=rendered, model_id=st.model_id,
            image_description=st.image_description if cm.request.images else "",
            debug={"pipeline": {"rewrite_query": st.rewrite_query, "intent": st.intent,
                                "stages": st.stage_info}})

