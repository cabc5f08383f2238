"""The built-in agents with WeKnora's defaults (spec §6.12); a tenant's stored edit overrides the code
copy."""

from __future__ import annotations

from typing import Any

from knora.domain.knowledge import AGENT_VECTOR_THRESHOLD, DEFAULT_KEYWORD_THRESHOLD
from knora.domain.models import BUILTIN_CREATED_AT, AgentConfig

QUICK_ANSWER_ID = "builtin-quick-answer"
SMART_REASONING_ID = "builtin-smart-reasoning"

_RETRIEVAL: dict[str, Any] = {
    "embedding_top_k": 10, "keyword_threshold": DEFAULT_KEYWORD_THRESHOLD,
    "vector_threshold": AGENT_VECTOR_THRESHOLD, "rerank_top_k": 10,
    "rerank_threshold": 0.3, "faq_priority_enabled": True, "faq_direct_answer_threshold": 0.9,
    "faq_score_boost": 1.2, "enable_query_expansion": True, "enable_rewrite": True,
    "fallback_strategy": "model",
}
_COMMON: dict[str, Any] = {
    "model_id": "", "rerank_model_id": "", "temperature": 0.7, "max_completion_tokens": 2048,
    "web_search_enabled": True, "web_search_max_results": 5, "multi_turn_enabled": True, "history_turns": 5,
    "kb_selection_mode": "all", "knowledge_bases": [], "thinking": False, "citation_enabled": True,
    "mcp_selection_mode": "none", "mcp_services": [], "skills_selection_mode": "none", "selected_skills": [],
    "image_upload_enabled": False, "retrieve_kb_only_when_mentioned": False,
    "question_suggestions": {"conversation_starters": {"enabled": True, "count": 6, "mode": "hybrid"},
                             "follow_ups": {"enabled": False, "count": 3, "context_turns": 2}},
}

BUILTINS: dict[str, dict[str, Any]] = {
    QUICK_ANSWER_ID: {
        "name": "快速问答",
        "description": "Answers from the knowledge bases in one retrieval-augmented pass.",
        "avatar": "⚡", "config": {**_COMMON, **_RETRIEVAL, "agent_mode": "quick-answer", "agent_type": "",
                                   "system_prompt_id": "default_kb", "context_template_id": "default_context",
                                   "system_prompt": "", "context_template": "", "allowed_tools": []}},
    SMART_REASONING_ID: {
        "name": "智能推理", "description": "Plans, searches step by step with tools, then answers (ReAct).",
        "avatar": "🧠", "config": {**_COMMON, **_RETRIEVAL, "agent_mode": "smart-reasoning",
                                   "agent_type": "rag-qa", "system_prompt": "", "max_iterations": 50,
                                   "allowed_tools": ["knowledge_search", "grep_chunks",
                                                     "list_knowledge_chunks", "query_knowledge_graph",
                                                     "get_document_info"]}},
}

AGENT_TYPE_PRESETS: dict[str, dict[str, Any]] = {
    "rag-qa": {"max_iterations": 30,
               "allowed_tools": BUILTINS[SMART_REASONING_ID]["config"]["allowed_tools"]},
    "data-analysis": {"max_iterations": 30, "temperature": 0.3, "max_completion_tokens": 4096,
                      "allowed_tools": ["data_schema", "data_analysis"]},
    "custom": {"max_iterations": 10, "allowed_tools": []},
}


def builtin(agent_id: str, tenant_id: int) -> AgentConfig | None:
    spec = BUILTINS.get(agent_id)
    if spec is None:
        return None
    return AgentConfig(id=agent_id, tenant_id=tenant_id, name=spec["name"], description=spec["description"],
                       avatar=spec["avatar"], is_builtin=True, config=dict(spec["config"]),
                       created_at=BUILTIN_CREATED_AT, updated_at=BUILTIN_CREATED_AT)
