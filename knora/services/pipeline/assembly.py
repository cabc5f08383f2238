"""Turn request → PipelineRequest (defaults, agent overrides, search targets) and the stage list (spec §1.7).

Defaults are the built-in quick-answer agent's (spec §6.12), because a request without an agent is what a
user gets from the quick-answer mode; they live in one place, ``domain.agent_settings.AgentSettings``. Agent
overrides follow ``applyAgentOverridesToChatManage``. Each part of the request is one small function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypedDict

from knora import prompts
from knora.domain.agent_settings import AgentSettings
from knora.domain.knowledge import KnowledgeBase
from knora.domain.search import SearchTarget
from knora.ports.turn import TurnRequest
from knora.services.pipeline.deps import PipelineDeps, Reads
from knora.services.pipeline.framework import PipelineBuilder
from knora.services.pipeline.state import EventType, PipelineRequest, SummaryConfig, scoped_search
from knora.services.retrieval.shared import readable
from knora.services.retrieval.turn_reads import TurnReads

log = logging.getLogger(__name__)


class RetrievalFields(TypedDict):
    """The ``PipelineRequest`` fields that say what to search and how to rank it."""

    knowledge_base_ids: tuple[str, ...]
    knowledge_ids: tuple[str, ...]
    tag_ids: tuple[str, ...]
    search_targets: tuple[SearchTarget, ...]
    vector_threshold: float
    keyword_threshold: float
    embedding_top_k: int
    rerank_model_id: str
    rerank_top_k: int
    rerank_threshold: float
    chat_model_id: str


class AnsweringFields(TypedDict):
    """The ``PipelineRequest`` fields that shape the answer: prompts, fallback, rewrite, FAQ, web."""

    summary: SummaryConfig
    fallback_strategy: str
    fallback_response: str
    fallback_prompt: str
    citations_enabled: bool
    enable_rewrite: bool
    enable_query_expansion: bool
    rewrite_prompt_system: str
    rewrite_prompt_user: str
    query_understand_model_id: str
    faq_priority_enabled: bool
    faq_direct_answer_threshold: float
    faq_score_boost: float
    data_analysis_enabled: bool
    vlm_model_id: str
    intent_prompt_overrides: dict[str, str]
    web_search_enabled: bool
    web_search_max_results: int
    web_fetch_enabled: bool
    web_fetch_top_n: int


def _template(text: str, template_id: str, default_id: str) -> str:
    """The agent's own text, else its template id's prompt, else the default template."""
    if text.strip():
        return text
    try:
        return prompts.content(template_id or default_id)
    except KeyError:
        return prompts.content(default_id)


async def _scope_kb_ids(deps: PipelineDeps, req: TurnRequest, agent: AgentSettings) -> list[str]:
    """The request's KBs; with none named (and no documents), the agent's selection (spec §1.9)."""
    kb_ids = [k for k in req.knowledge_base_ids if k]
    if kb_ids or any(req.knowledge_ids) or req.agent is None or agent.retrieve_kb_only_when_mentioned:
        return kb_ids
    if agent.kb_selection_mode == "all":
        if deps.list_kbs is None:
            return []
        # Every KB of the tenant that quick answer can search (vector or keyword index).
        return [kb.id for kb in await deps.list_kbs(req.resource_tenant_id)
                if kb.indexing_strategy.vector_enabled or kb.indexing_strategy.keyword_enabled]
    if agent.kb_selection_mode == "none":
        return []
    return [k for k in agent.knowledge_bases if k]


async def _read_kbs(reads: Reads | None, tenant_id: int, kb_ids: list[str]) -> list[KnowledgeBase]:
    """The tenant's KBs among ``kb_ids``, its own and those shared with it (reads are tenant-agnostic;
    other ids are dropped)."""
    if reads is None or not kb_ids:
        return []
    return await readable(reads, tenant_id, await reads.knowledge_bases(kb_ids))


async def _targets(deps: PipelineDeps, req: TurnRequest, reads: Reads | None, kbs: list[KnowledgeBase],
                   kb_ids: list[str], knowledge_ids: list[str]) -> list[SearchTarget]:
    if kb_ids and not knowledge_ids and not req.tag_ids:
        # Whole KBs only: the targets are the caller's own KBs, in request order (spec §1.8 step 3); no need
        # for the general builder's extra reads.
        own = {kb.id for kb in kbs}
        return [SearchTarget(type="knowledge_base", knowledge_base_id=k, tenant_id=req.resource_tenant_id)
                for k in dict.fromkeys(kb_ids) if k in own]
    if deps.search is None or not (kb_ids or knowledge_ids):
        return []
    from knora.services.retrieval.targets import build_targets

    tag_scopes = {kb_ids[0]: list(req.tag_ids)} if req.tag_ids and kb_ids else None
    try:
        search = scoped_search(deps.search, reads if isinstance(reads, TurnReads) else None)
        return await build_targets(search, req.resource_tenant_id, kb_ids, knowledge_ids,
                                   tag_scopes)
    except Exception as exc:
        raise RuntimeError(f"build search targets: {exc}") from exc


async def _entity_kb_ids(deps: PipelineDeps, tenant_id: int, kbs: list[KnowledgeBase]) -> list[str]:
    """KBs in scope that hold a knowledge graph (entity search runs over them)."""
    wanted = [kb.id for kb in kbs if kb.indexing_strategy.graph_enabled or kb.extract_config.get("enabled")]
    if deps.graph_store is None or not wanted:
        return []
    try:
        return await deps.graph_store.has_graph(tenant_id, wanted)
    except Exception as exc:  # noqa: BLE001 - no graph → no entity search
        log.warning("graph lookup failed: %s", exc)
        return []


def _summary(agent: AgentSettings) -> SummaryConfig:
    return SummaryConfig(
        prompt=_template(agent.system_prompt, agent.system_prompt_id, "default_kb"),
        context_template=_template(agent.context_template, agent.context_template_id, "default_context"),
        temperature=agent.temperature, max_completion_tokens=agent.max_completion_tokens,
        thinking=agent.thinking)


def _first_kb_model(kbs: list[KnowledgeBase], attr: str) -> str:
    """The first KB's own model of a kind (``rerank_model_id``, ``summary_model_id``) for an agent without."""
    return next((str(getattr(kb, attr)) for kb in kbs if getattr(kb, attr)), "")


@dataclass(frozen=True)
class _Scope:
    """What the turn searches: the KBs and documents asked for, the KBs read, the search targets."""

    kb_ids: list[str]
    knowledge_ids: list[str]
    kbs: list[KnowledgeBase]
    targets: list[SearchTarget]


async def _scope(deps: PipelineDeps, req: TurnRequest, reads: Reads | None, agent: AgentSettings) -> _Scope:
    kb_ids = await _scope_kb_ids(deps, req, agent)
    knowledge_ids = [k for k in req.knowledge_ids if k]
    kbs = await _read_kbs(reads, req.resource_tenant_id, kb_ids)
    targets = await _targets(deps, req, reads, kbs, kb_ids, knowledge_ids)
    known = {k.id for k in kbs}
    missing = [t.knowledge_base_id for t in targets if t.knowledge_base_id not in known]
    if missing:
        kbs += await _read_kbs(reads, req.resource_tenant_id, missing)
    return _Scope(kb_ids, knowledge_ids, kbs, targets)


def _retrieval(agent: AgentSettings, req: TurnRequest, scope: _Scope) -> RetrievalFields:
    """Search and rerank knobs; the models fall back to the first KB's own."""
    return RetrievalFields(
        knowledge_base_ids=tuple(scope.kb_ids), knowledge_ids=tuple(scope.knowledge_ids),
        tag_ids=tuple(req.tag_ids), search_targets=tuple(scope.targets),
        vector_threshold=agent.vector_threshold, keyword_threshold=agent.keyword_threshold,
        embedding_top_k=agent.embedding_top_k,
        rerank_model_id=agent.rerank_model_id or _first_kb_model(scope.kbs, "rerank_model_id"),
        rerank_top_k=agent.rerank_top_k, rerank_threshold=agent.rerank_threshold or 0.0,
        chat_model_id=(req.summary_model_id or agent.model_id
                       or _first_kb_model(scope.kbs, "summary_model_id")))


def _answering(agent: AgentSettings, req: TurnRequest) -> AnsweringFields:
    """Prompts, fallback, rewrite, FAQ and web knobs of the answer."""
    return AnsweringFields(
        summary=_summary(agent), fallback_strategy=agent.fallback_strategy,
        fallback_response=agent.fallback_response or prompts.content("default_fallback"),
        fallback_prompt=agent.fallback_prompt or prompts.content("default_fallback_prompt"),
        citations_enabled=req.citations_enabled and agent.citation_enabled,
        enable_rewrite=agent.enable_rewrite, enable_query_expansion=agent.enable_query_expansion,
        rewrite_prompt_system=agent.rewrite_prompt_system, rewrite_prompt_user=agent.rewrite_prompt_user,
        query_understand_model_id=agent.query_understand_model_id,
        faq_priority_enabled=agent.faq_priority_enabled,
        faq_direct_answer_threshold=agent.faq_direct_answer_threshold, faq_score_boost=agent.faq_score_boost,
        data_analysis_enabled=agent.data_analysis_enabled, vlm_model_id=agent.vlm_model_id,
        intent_prompt_overrides={str(k): str(v) for k, v in agent.intent_prompts.items()},
        web_search_enabled=req.web_search_enabled, web_search_max_results=agent.web_search_max_results,
        web_fetch_enabled=agent.web_fetch_enabled, web_fetch_top_n=agent.web_fetch_top_n)


async def build_request(deps: PipelineDeps, req: TurnRequest, reads: Reads | None = None
                        ) -> tuple[PipelineRequest, list[KnowledgeBase]]:
    """``reads`` is the turn's read view (``TurnReads``) when the runner made one: the KBs read here are then
    not read again by the search."""
    reads = reads if reads is not None else deps.reads
    agent = req.agent.settings() if req.agent is not None else AgentSettings()
    scope = await _scope(deps, req, reads, agent)
    kbs = scope.kbs
    pr = PipelineRequest(
        tenant_id=req.resource_tenant_id, session_id=req.session_id, request_id=req.request_id,
        query=req.query,
        user_message_id=req.user_message_id, assistant_message_id=req.assistant_message_id,
        max_rounds=agent.history_turns if agent.multi_turn_enabled else 0,
        **_retrieval(agent, req, scope), **_answering(agent, req),
        images=tuple(req.images), language=prompts.language_name(req.language, req.query),
        history=tuple(req.history),
        entity_kb_ids=tuple(await _entity_kb_ids(deps, req.resource_tenant_id, kbs)),
        wiki_kb_ids=tuple(kb.id for kb in kbs if kb.indexing_strategy.wiki_enabled),
        kb_types={kb.id: str(kb.type) for kb in kbs},
    )
    if pr.images and not pr.vlm_model_id:  # Knora: a knowledge base's captioning VLM describes chat images
        vlm = next((kb.vlm_config.model_id for kb in kbs if kb.vlm_config.active), "")
        if vlm:
            pr = pr.with_(vlm_model_id=vlm)
    return pr, kbs


def build_stages(pr: PipelineRequest) -> list[EventType]:
    E = EventType
    has_history = pr.max_rounds > 0
    if not (pr.has_kb_scope or pr.web_search_enabled):
        # Knora: images are described on the pure-chat path too, by the same stage (WeKnora's handler runs a
        # separate VLM analysis there, spec §5.10)
        return (PipelineBuilder().add_if(has_history, E.LOAD_HISTORY)
                .add_if(bool(pr.images), E.QUERY_UNDERSTAND).add(E.CHAT_COMPLETION_STREAM).build())
    return (PipelineBuilder()
            .add_if(has_history, E.LOAD_HISTORY)
            .add(E.QUERY_UNDERSTAND, E.CHUNK_SEARCH_PARALLEL, E.CHUNK_RERANK)
            .add_if(pr.web_search_enabled, E.WEB_FETCH)
            .add(E.CHUNK_MERGE, E.FILTER_TOP_K)
            .add_if(pr.data_analysis_enabled, E.DATA_ANALYSIS)
            .add(E.INTO_CHAT_MESSAGE, E.CHAT_COMPLETION_STREAM)
            .build())
