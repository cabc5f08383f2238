"""chat_completion_stream channel rules with a function-driven model (no network): thinking span closed when
the answer starts, duplicate done suppressed, no done after a stop; progress output for weak candidates."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from knora.domain.search import SearchResult
from knora.domain.stream import BusEvent
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.errors import ERR_SEARCH_NOTHING
from knora.services.pipeline.framework import EventManager
from knora.services.pipeline.plugins.chat_completion import ChatCompletionStream
from knora.services.pipeline.progress import Progress
from knora.services.pipeline.state import ChatManage, EventType, PipelineRequest, PipelineState
from tests.services.pipeline.conftest import make_ctx

pytestmark = pytest.mark.unit


class FunctionModel:
    model_id = "fn:model"
    supports_tools = False

    def __init__(self, chunks: list[ChatChunk]) -> None:
        self.chunks = chunks
        self.seen: list[Sequence[ChatMessage]] = []

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        raise AssertionError("not used")

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        self.seen.append(messages)
        for c in self.chunks:
            yield c


class _Models:
    def __init__(self, m: FunctionModel) -> None:
        self.m = m

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> FunctionModel:
        return self.m


def _setup(chunks: list[ChatChunk]) -> tuple[ChatManage, EventManager, object]:
    ctx, rec = make_ctx()
    cm = ChatManage(PipelineRequest(tenant_id=1, session_id="s", request_id="r", query="q"), PipelineState(),
                    ctx)
    m = EventManager()
    m.register(ChatCompletionStream(PipelineDeps(chat_models=_Models(FunctionModel(chunks)),
                                                 rerankers=None)))  # type: ignore[arg-type]
    return cm, m, rec


async def test_channels_and_duplicate_done() -> None:
    cm, m, rec = _setup([ChatChunk(reasoning_content="hm"), ChatChunk(reasoning_content="m"),
                         ChatChunk(content="A"), ChatChunk(content="B", finish_reason="stop"),
                         ChatChunk(finish_reason="stop"), ChatChunk(content="late")])
    assert await m.trigger(cm, EventType.CHAT_COMPLETION_STREAM) is None
    kinds = [(str(e.type), e.data.get("content"),
              e.data.get("done")) for e in rec.events]  # type: ignore[attr-defined]
    assert kinds == [("thought", "hm", False), ("thought", "m", False), ("thought", "", True),
                     ("final_answer", "A", False), ("final_answer", "B", True)]
    assert cm.state.chat_response == "AB"
    assert cm.state.reasoning == "hmm"
    ids = {e.data["event_id"] for e in rec.of(BusEvent.FINAL_ANSWER)}  # type: ignore[attr-defined]
    assert len(ids) == 1
    assert next(iter(ids)).endswith("-answer")


async def test_stop_sends_no_done_but_closes_thinking() -> None:
    cm, m, rec = _setup([ChatChunk(reasoning_content="r"), ChatChunk(content="A"), ChatChunk(content="B"),
                         ChatChunk(finish_reason="stop")])

    async def stop(ev: object) -> None:
        cm.ctx.cancelled.set()

    cm.ctx.bus.subscribe(BusEvent.FINAL_ANSWER, stop)
    await m.trigger(cm, EventType.CHAT_COMPLETION_STREAM)
    answers = rec.of(BusEvent.FINAL_ANSWER)  # type: ignore[attr-defined]
    assert [e.data["content"] for e in answers] == ["A"]
    assert not any(e.data["done"] for e in answers)
    assert rec.of(BusEvent.THOUGHT)[-1].data["done"] is True  # type: ignore[attr-defined]


async def test_progress_reports_weak_candidates() -> None:
    ctx, rec = make_ctx()
    cm = ChatManage(PipelineRequest(tenant_id=1, session_id="s", request_id="r", query="q",
                                    knowledge_base_ids=("kb",)), PipelineState(), ctx)
    p = Progress(cm)
    await p.begin_retrieval()
    cm.state.search_result = [SearchResult(id="a", content="x", knowledge_id="k"),
                              SearchResult(id="b", content="y", knowledge_id="k")]
    await p.end_retrieval(ERR_SEARCH_NOTHING)
    await p.end_retrieval(None)  # closing twice is a no-op
    result = rec.of(BusEvent.TOOL_RESULT)
    assert len(result) == 1
    assert result[0].data["output"] == "命中 2 条候选，相关性不足，未用于回答"
    assert result[0].data["data"]["candidate_count"] == 2
    assert result[0].data["data"]["count"] == 0
    assert result[0].data["success"]
    assert result[0].data["tool_call_id"].startswith("ragpipe-")
