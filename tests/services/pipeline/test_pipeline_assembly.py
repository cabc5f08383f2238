"""Defaults, agent overrides and the dynamic stage list (spec §1.7, §6.12)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from knora import prompts
from knora.domain.knowledge import (
    AGENT_VECTOR_THRESHOLD,
    DEFAULT_KEYWORD_THRESHOLD,
    IndexingStrategy,
    KnowledgeBase,
)
from knora.domain.models import AgentConfig
from knora.ports.turn import TurnRequest
from knora.services.pipeline.assembly import build_request, build_stages
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.state import EventType

pytestmark = pytest.mark.unit
E = EventType
KBS = [KnowledgeBase(id="kb1", tenant_id=1, name="a"), KnowledgeBase(id="kb2", tenant_id=1, name="b"),
       KnowledgeBase(id="kbx", tenant_id=2, name="foreign"),
       KnowledgeBase(id="kbw", tenant_id=1, name="wiki", rerank_model_id="rr",
                     indexing_strategy=IndexingStrategy(wiki_enabled=True))]


class _Reads:
    async def knowledge_bases(self, ids: Sequence[str]) -> list[KnowledgeBase]:
        return [kb for kb in KBS if kb.id in ids]

    async def shared_kb_ids(self, tenant_id: int, ids: Sequence[str]) -> set[str]:
        return set()  # nothing is shared: the foreign KB stays foreign

    async def chunks(self, ids: Sequence[str]) -> list[Any]:
        return []

    async def knowledge(self, ids: Sequence[str]) -> list[Any]:
        return []


async def _list_kbs(tenant_id: int) -> list[KnowledgeBase]:
    return [kb for kb in KBS if kb.tenant_id == tenant_id]


def deps() -> PipelineDeps:
    return PipelineDeps(chat_models=None, rerankers=None, reads=_Reads(),
                        list_kbs=_list_kbs)  # type: ignore[arg-type]


def req(**kw: Any) -> TurnRequest:
    return TurnRequest(tenant_id=1, session_id="s", request_id="r", user_message_id="u",
                       assistant_message_id="a",
                       query=kw.pop("query", "q"), **kw)


class TestAssembly:
    async def test_defaults_are_the_quick_answer_agent(self) -> None:
        pr, _ = await build_request(deps(), req(knowledge_base_ids=["kb1", "kbx"]))
        assert [t.knowledge_base_id for t in pr.search_targets] == ["kb1"]  # foreign KB dropped
        assert (pr.embedding_top_k, pr.vector_threshold, pr.keyword_threshold, pr.rerank_top_k,
                pr.rerank_threshold, pr.max_rounds) == (
            10, AGENT_VECTOR_THRESHOLD, DEFAULT_KEYWORD_THRESHOLD, 10, 0.3, 5)
        assert pr.summary.prompt == prompts.content("default_kb")
        assert pr.fallback_strategy == "model"
        assert build_stages(pr) == [E.LOAD_HISTORY, E.QUERY_UNDERSTAND, E.CHUNK_SEARCH_PARALLEL,
                                    E.CHUNK_RERANK,
                                    E.CHUNK_MERGE, E.FILTER_TOP_K, E.INTO_CHAT_MESSAGE,
                                    E.CHAT_COMPLETION_STREAM]

    async def test_agent_overrides(self) -> None:
        agent = AgentConfig(name="x", config={
            "kb_selection_mode": "all", "multi_turn_enabled": False, "rerank_threshold": 0,
                                              "embedding_top_k": 0,
            "system_prompt": "Custom {contexts}", "data_analysis_enabled": True, "fallback_strategy": "fixed",
            "citation_enabled": False, "intent_prompts": {"greeting": "Hi!"}})
        pr, _ = await build_request(deps(), req(agent=agent, web_search_enabled=True))
        assert [t.knowledge_base_id for t in pr.search_targets] == ["kb1", "kb2", "kbw"]
        assert pr.rerank_threshold == 0.0
        assert pr.embedding_top_k == 10
        assert pr.max_rounds == 0
        assert pr.rerank_model_id == "rr"
        assert pr.wiki_kb_ids == ("kbw",)
        assert pr.summary.prompt == "Custom {contexts}"
        assert not pr.citations_enabled
        assert pr.intent_prompt_overrides == {"greeting": "Hi!"}
        assert build_stages(pr) == [E.QUERY_UNDERSTAND, E.CHUNK_SEARCH_PARALLEL, E.CHUNK_RERANK, E.WEB_FETCH,
                                    E.CHUNK_MERGE, E.FILTER_TOP_K, E.DATA_ANALYSIS, E.INTO_CHAT_MESSAGE,
                                    E.CHAT_COMPLETION_STREAM]

    async def test_no_kb_and_no_web_is_pure_chat(self) -> None:
        pr, _ = await build_request(deps(), req(query="你好"))
        assert build_stages(pr) == [E.LOAD_HISTORY, E.CHAT_COMPLETION_STREAM]
        assert pr.language == "Chinese (Simplified)"
        agent = AgentConfig(name="x", config={"kb_selection_mode": "none"})
        pr, _ = await build_request(deps(), req(agent=agent))
        assert not pr.search_targets
        assert build_stages(pr)[-1] == E.CHAT_COMPLETION_STREAM
