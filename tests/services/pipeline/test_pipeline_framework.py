"""EventManager chains, PluginError values, PipelineBuilder, state clone and the registration order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from knora.domain.search import SearchResult
from knora.ports.turn import TurnContext
from knora.services.pipeline.errors import CATALOGUE, ERR_SEARCH, ERR_SEARCH_NOTHING, PluginError
from knora.services.pipeline.framework import PRESETS, EventManager, Next, PipelineBuilder
from knora.services.pipeline.plugins.registration import default_plugins
from knora.services.pipeline.state import (
    ChatManage,
    EventType,
    PipelineRequest,
    PipelineState,
    needs_kb_retrieval,
)
from tests.services.pipeline.conftest import make_ctx

pytestmark = pytest.mark.unit
E = EventType


class _Probe:
    """Records 'before'/'after' around next(); optionally fails instead of calling next()."""

    def __init__(self, name: str, log: list[str], *, post: bool = False,
                 fail: PluginError | None = None) -> None:
        self.name, self.log, self.post, self.fail = name, log, post, fail

    def activation_events(self) -> Sequence[EventType]:
        return (E.CHUNK_RERANK,)

    async def on_event(self, ctx: TurnContext, event_type: EventType, cm: ChatManage,
                       next: Next) -> PluginError | None:
        if self.fail is not None:
            self.log.append(f"{self.name}:fail")
            return self.fail
        if self.post:
            err = await next()
            self.log.append(f"{self.name}:after")
            return err
        self.log.append(f"{self.name}:before")
        return await next()


def _cm() -> ChatManage:
    ctx, _ = make_ctx()
    return ChatManage(PipelineRequest(tenant_id=1, session_id="s", request_id="r", query="q"),
                      PipelineState(), ctx)


class TestEventManager:
    async def test_pre_next_plugins_run_in_order_post_next_in_reverse(self) -> None:
        log: list[str] = []
        m = EventManager()
        for p in (_Probe("rerank", log), _Probe("affinity", log, post=True), _Probe("wiki", log, post=True)):
            m.register(p)
        assert await m.trigger(_cm(), E.CHUNK_RERANK) is None
        assert log == ["rerank:before", "wiki:after", "affinity:after"]

    async def test_error_without_next_stops_the_chain_and_is_the_event_value(self) -> None:
        log: list[str] = []
        m = EventManager()
        m.register(_Probe("rerank", log, fail=ERR_SEARCH_NOTHING))
        m.register(_Probe("wiki", log, post=True))
        err = await m.trigger(_cm(), E.CHUNK_RERANK)
        assert err is not None
        assert err.is_search_nothing
        assert log == ["rerank:fail"]

    async def test_event_without_listeners_is_a_no_op(self) -> None:
        assert await EventManager().trigger(_cm(), E.WEB_FETCH) is None


class TestPluginError:
    def test_with_error_copies_and_keeps_templates_clean(self) -> None:
        err = ERR_SEARCH.with_error(ValueError("boom"))
        assert err.error_type == "search_failed"
        assert "boom" in err.message
        assert ERR_SEARCH.err is None
        assert {e.error_type for e in CATALOGUE} >= {"search_nothing", "model_call_failed",
                                                     "get_chat_model_failed"}


class TestBuilderAndPresets:
    def test_add_if(self) -> None:
        stages = PipelineBuilder().add_if(False, E.LOAD_HISTORY).add(E.QUERY_UNDERSTAND).add_if(True,
                                                                                                E.WEB_FETCH)
        assert stages.build() == [E.QUERY_UNDERSTAND, E.WEB_FETCH]

    def test_presets(self) -> None:
        assert PRESETS["rag"] == (E.CHUNK_SEARCH, E.CHUNK_RERANK, E.CHUNK_MERGE, E.INTO_CHAT_MESSAGE,
                                  E.CHAT_COMPLETION)
        assert PRESETS["rag_stream"][-1] == E.CHAT_COMPLETION_STREAM


class TestState:
    def test_clone_copies_request_and_query_state_but_not_results(self) -> None:
        cm = _cm()
        cm.state.rewrite_query, cm.state.intent, cm.state.entity = "r", "kb_search", ["x"]
        cm.state.search_result = [SearchResult(id="a", content="c", knowledge_id="k")]
        twin = cm.clone()
        assert (twin.state.rewrite_query, twin.state.intent, twin.state.entity) == ("r", "kb_search", ["x"])
        assert twin.state.search_result == []
        assert twin.ctx is cm.ctx
        twin.state.entity.append("y")
        assert cm.state.entity == ["x"]

    @pytest.mark.parametrize(("intent", "retrieves"), [
        ("", True), ("kb_search", True), ("clarification", True), ("summarize", True), ("greeting", False),
        ("chitchat", False), ("follow_up", False), ("image_only", False), ("doc_only", False),
        ("web_search", False), ("kb-lookup", True)])
    def test_intent_gating(self, intent: str, retrieves: bool) -> None:
        assert needs_kb_retrieval(intent) is retrieves

    def test_web_search_intent_retrieves_only_with_web_search(self) -> None:
        cm = _cm()
        cm.state.intent = "web_search"
        assert cm.needs_retrieval is False
        cm.request = cm.request.with_(web_search_enabled=True)
        assert cm.needs_retrieval is True


class _Deps:
    chat_models = rerankers = search = reads = web_search = graph_store = None


def test_registration_order_reproduces_weknora() -> None:
    m = EventManager()
    for p in default_plugins(_Deps()):  # type: ignore[arg-type]
        m.register(p)
    assert [type(p).__name__ for p in m.listeners(E.QUERY_UNDERSTAND)] == ["QueryUnderstand", "ExtractEntity"]
    assert [type(p).__name__ for p in m.listeners(E.CHUNK_RERANK)] == ["ChunkRerank", "WikiBoost"]
