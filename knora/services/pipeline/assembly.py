"""Turn request → PipelineRequest (defaults, agent overrides, search targets) and the stage list (spec §1.7).

Defaults are the built-in quick-answer agent's (spec §6.12), because a request without an agent is what a user
gets from the quick-answer mode. Agent overrides follow ``applyAgentOverridesToChatManage``.
"""

from __future__ import annotations

import logging
from typing import Any

from knora import prompts
from knora.domain.knowledge import KnowledgeBase
from knora.domain.search import SearchTarget
from knora.services.pipeline.deps import PipelineDeps
from knora.services.pipeline.framework import PipelineBuilder
from knora.services.pipeline.state import EventType, PipelineRequest, SummaryConfig, scoped_search
from knora.services.retrieval.turn_reads import TurnReads
from knora.services.streaming.turn import TurnRequest

log = logging.getLogger(__name__)

QUICK_ANSWER_DEFAULTS: dict[str, Any] = {
    "temperature": 0.7, "max_completion_tokens": 2048, "history_turns": 5, "multi_turn_enabled": True,
    "embedding_top_k": 10, "keyword_threshold": 0.3, "vector_threshold": 0.5, "rerank_top_k": 10,
    "rerank_threshold": 0.3, "faq_priority_enabled": True, "faq_direct_answer_threshold": 0.9,
    "faq_score_boost": 1.2, "enable_query_expansion": True, "enable_rewrite": True, "fallback_strategy": "model",
    "web_search_max_results": 5, "thinking": False, "citation_enabled": True,
}


def _num(cfg: dict[str, Any], key: str, default: float) -> float:
    v = cfg.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else default


def _template(cfg: dict[str, Any], text_key: str, id_key: str, default_id: str) -> str:
    if str(cfg.get(text_key) or "").strip():
        return str(cfg[text_key])
    try:
        return prompts.content(str(cfg.get(id_key) or default_id))
    except KeyError:
        return prompts.content(default_id)


async def build_request(deps: PipelineDeps, req: TurnRequest, reads: Any = None
                        ) -> tuple[PipelineRequest, list[KnowledgeBase]]:
    """``reads`` is the turn's read view (``TurnReads``) when the runner made one: the KBs read here are then not
    read again by the search."""
    reads = reads if reads is not None else deps.reads
    cfg = {**QUICK_ANSWER_DEFAULTS, **((req.agent.config if req.agent else None) or {})}
    kb_ids = [k for k in req.knowledge_base_ids if k]
    knowledge_ids = [k for k in req.knowledge_ids if k]
    if not kb_ids and not knowledge_ids and req.agent is not None and not cfg.get("retrieve_kb_only_when_mentioned"):
        mode = cfg.get("kb_selection_mode") or "selected"
        if mode == "all" and deps.list_kbs is not None:
            # Every KB of the tenant that quick answer can search (vector or keyword index), spec §1.9.
            kb_ids = [kb.id for kb in await deps.list_kbs(req.tenant_id)
                      if kb.indexing_strategy.vector_enabled or kb.indexing_strategy.keyword_enabled]
        elif mode != "none":
            kb_ids = [k for k in cfg.get("knowledge_bases") or [] if k]
    kbs: list[KnowledgeBase] = []
    if reads is not None and kb_ids:
        kbs = [kb for kb in await reads.knowledge_bases(kb_ids) if kb.tenant_id == req.tenant_id]
    targets: list[Any] = []
    if kb_ids and not knowledge_ids and not req.tag_ids:
        # Whole KBs only: the targets are the caller's own KBs, in request order (spec §1.8 step 3); no need for
        # the general builder's extra reads.
        own = {kb.id for kb in kbs}
        targets = [SearchTarget(type="knowledge_base", knowledge_base_id=k, tenant_id=req.tenant_id)
                   for k in dict.fromkeys(kb_ids) if k in own]
    elif deps.search is not None and (kb_ids or knowledge_ids):
        from knora.services.retrieval.targets import build_targets

        tag_scopes = {kb_ids[0]: list(req.tag_ids)} if req.tag_ids and kb_ids else None
        try:
            search = scoped_search(deps.search, reads if isinstance(reads, TurnReads) else None)
            targets = await build_targets(search, req.tenant_id, kb_ids, knowledge_ids,  # type: ignore[arg-type]
                                          tag_scopes)
        except Exception as exc:
            raise RuntimeError(f"build search targets: {exc}") from exc
    if reads is not None and targets:
        missing = [t.knowledge_base_id for t in targets if t.knowledge_base_id not in {k.id for k in kbs}]
        if missing:
            kbs += [kb for kb in await reads.knowledge_bases(missing) if kb.tenant_id == req.tenant_id]
    multi_turn = cfg.get("multi_turn_enabled", True) is not False
    entity_kbs: list[str] = []
    if deps.graph_store is not None and kbs:
        wanted = [kb.id for kb in kbs if kb.indexing_strategy.graph_enabled or kb.extract_config.get("enabled")]
        if wanted:
            try:
                entity_kbs = await deps.graph_store.has_graph(req.tenant_id, wanted)
            except Exception as exc:  # noqa: BLE001 - no graph → no entity search
                log.warning("graph lookup failed: %s", exc)
    rerank_id = str(cfg.get("rerank_model_id") or "") or next((kb.rerank_model_id for kb in kbs
                                                                 if kb.rerank_model_id), "")
    chat_id = str(req.summary_model_id or cfg.get("model_id") or "") or next(
        (kb.summary_model_id for kb in kbs if kb.summary_model_id), "")
    temperature = cfg.get("temperature")
    pr = PipelineRequest(
        tenant_id=req.tenant_id, session_id=req.session_id, request_id=req.request_id, query=req.query,
        user_message_id=req.user_message_id, assistant_message_id=req.assistant_message_id,
        max_rounds=int(_num(cfg, "history_turns", 5)) if multi_turn else 0,
        knowledge_base_ids=tuple(kb_ids), knowledge_ids=tuple(knowledge_ids), tag_ids=tuple(req.tag_ids),
        search_targets=tuple(targets),
        vector_threshold=_num(cfg, "vector_threshold", 0.5), keyword_threshold=_num(cfg, "keyword_threshold", 0.3),
        embedding_top_k=int(_num(cfg, "embedding_top_k", 10)), rerank_model_id=rerank_id,
        rerank_top_k=int(_num(cfg, "rerank_top_k", 10)),
        rerank_threshold=float(cfg.get("rerank_threshold") or 0.0),
        chat_model_id=chat_id,
        summary=SummaryConfig(
            prompt=_template(cfg, "system_prompt", "system_prompt_id", "default_kb"),
            context_template=_template(cfg, "context_template", "context_template_id", "default_context"),
            temperature=float(temperature) if isinstance(temperature, int | float) and temperature >= 0 else 0.7,
            max_completion_tokens=int(_num(cfg, "max_completion_tokens", 2048)),
            thinking=bool(cfg.get("thinking")) if cfg.get("thinking") is not None else None),
        fallback_strategy=str(cfg.get("fallback_strategy") or "fixed"),
        fallback_response=str(cfg.get("fallback_response") or prompts.content("default_fallback")),
        fallback_prompt=str(cfg.get("fallback_prompt") or prompts.content("default_fallback_prompt")),
        citations_enabled=req.citations_enabled and cfg.get("citation_enabled") is not False,
        enable_rewrite=bool(cfg.get("enable_rewrite", True)),
        enable_query_expansion=bool(cfg.get("enable_query_expansion", True)),
        rewrite_prompt_system=str(cfg.get("rewrite_prompt_system") or ""),
        rewrite_prompt_user=str(cfg.get("rewrite_prompt_user") or ""),
        query_understand_model_id=str(cfg.get("query_understand_model_id") or ""),
        faq_priority_enabled=bool(cfg.get("faq_priority_enabled", True)),
        faq_direct_answer_threshold=_num(cfg, "faq_direct_answer_threshold", 0.9),
        faq_score_boost=_num(cfg, "faq_score_boost", 1.2),
        data_analysis_enabled=bool(cfg.get("data_analysis_enabled", False)),
        images=tuple(req.images), vlm_model_id=str(cfg.get("vlm_model_id") or ""),
        intent_prompt_overrides={str(k): str(v) for k, v in (cfg.get("intent_prompts") or {}).items()},
        web_search_enabled=req.web_search_enabled,
        web_search_max_results=int(_num(cfg, "web_search_max_results", 5)),
        web_fetch_enabled=bool(cfg.get("web_fetch_enabled", False)),
        web_fetch_top_n=int(_num(cfg, "web_fetch_top_n", 3)),
        language=prompts.language_name(req.language, req.query),
        history=tuple(req.history), entity_kb_ids=tuple(entity_kbs),
        wiki_kb_ids=tuple(kb.id for kb in kbs if kb.indexing_strategy.wiki_enabled),
        kb_types={kb.id: str(kb.type) for kb in kbs},
    )
    return pr, kbs


def build_stages(pr: PipelineRequest) -> list[EventType]:
    E = EventType
    has_history = pr.max_rounds > 0
    if not (pr.has_kb_scope or pr.web_search_enabled):
        return PipelineBuilder().add_if(has_history, E.LOAD_HISTORY).add(E.CHAT_COMPLETION_STREAM).build()
    return (PipelineBuilder()
            .add_if(has_history, E.LOAD_HISTORY)
            .add(E.QUERY_UNDERSTAND, E.CHUNK_SEARCH_PARALLEL, E.CHUNK_RERANK)
            .add_if(pr.web_search_enabled, E.WEB_FETCH)
            .add(E.CHUNK_MERGE, E.FILTER_TOP_K)
            .add_if(pr.data_analysis_enabled, E.DATA_ANALYSIS)
            .add(E.INTO_CHAT_MESSAGE, E.CHAT_COMPLETION_STREAM)
            .build())
