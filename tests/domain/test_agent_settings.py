"""``AgentSettings``: one set of defaults, unknown fields kept, stored oddities read as defaults."""

from __future__ import annotations

from knora.domain.agent_settings import AgentSettings, default, ensure_defaults
from knora.domain.models import AgentConfig
from knora.services.agent.builtins import BUILTINS


def test_one_set_of_defaults_matches_the_builtin_quick_answer_agent() -> None:
    qa = BUILTINS["builtin-quick-answer"]["config"]
    typed = AgentSettings()
    for key in ("temperature", "max_completion_tokens", "history_turns", "multi_turn_enabled",
                "embedding_top_k", "keyword_threshold", "vector_threshold", "rerank_top_k",
                "rerank_threshold",
                "faq_priority_enabled", "faq_direct_answer_threshold", "faq_score_boost", "enable_rewrite",
                "enable_query_expansion", "fallback_strategy", "web_search_max_results", "thinking",
                "citation_enabled"):
        assert getattr(typed, key) == qa[key], key
    assert ensure_defaults({})["rerank_top_k"] == typed.rerank_top_k == 10


def test_unknown_fields_are_kept_and_the_dict_is_untouched() -> None:
    config = {"future_field": {"a": 1}, "rerank_top_k": 3}
    agent = AgentConfig(name="x", config=config)
    s = agent.settings()
    assert s.rerank_top_k == 3
    assert s.extra("future_field") == {"a": 1}
    assert agent.config == config
    assert s.model_dump(exclude_unset=True) == config


def test_values_that_do_not_parse_read_as_defaults() -> None:
    s = AgentSettings.of({"embedding_top_k": 0, "history_turns": -2, "temperature": "hot",
                          "knowledge_bases": "x", "kb_selection_mode": "", "multi_turn_enabled": None,
                          "rerank_threshold": 0,
                          "max_context_tokens": 0, "web_fetch_top_n": 2.9})
    assert (s.embedding_top_k, s.history_turns, s.temperature, s.knowledge_bases) == (10, 5, 0.7, [])
    assert s.kb_selection_mode == "selected"
    assert s.multi_turn_enabled is True
    assert s.rerank_threshold == 0.0  # zero is a real threshold
    assert s.max_context_tokens is None
    assert s.web_fetch_top_n == 2


def test_ensure_defaults_fills_only_missing_or_empty() -> None:
    c = ensure_defaults({"temperature": 0, "history_turns": 0, "thinking": True, "custom": 1})
    assert c["temperature"] == 0
    assert c["history_turns"] == default("history_turns")
    assert c["thinking"] is True
    assert c["custom"] == 1
    assert c["agent_mode"] == "quick-answer"
    assert c["fallback_strategy"] == "model"
