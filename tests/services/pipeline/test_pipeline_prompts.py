"""Prompt templates and the one render function (spec §8.1)."""

from __future__ import annotations

from datetime import datetime

import pytest

from knora import prompts

pytestmark = pytest.mark.unit


class TestPrompts:
    def test_every_template_the_pipeline_needs_exists(self) -> None:
        for tid in ("default_kb", "pure_chat", "default_context", "default_rewrite", "default_fallback",
                    "default_fallback_prompt", "default_session_title", "default_keywords_extraction",
                    "default_extract_entity", "data_analysis", "greeting", "chitchat", "summarize"):
            assert prompts.content(tid).strip()
        assert "{conversation}" in prompts.content("default_rewrite")
        assert "{query}" in prompts.user_content("default_rewrite")

    def test_single_pass_known_keys_both_brace_styles(self) -> None:
        now = datetime(2026, 3, 2, 10, 30, 0)
        text = ('{query} / {{ language }} / {unknown} / {"json": 1} / '
                '{current_time} {current_week} {yesterday}')
        out = prompts.render(text, {"query": "say {language}", "language": "English"}, now=now)
        assert out == ('say {language} / English / {unknown} / {"json": 1} / '
                       '2026-03-02 10:30:00 Monday 2026-03-01')

    @pytest.mark.parametrize(("locale", "query", "name"), [
        ("zh-CN", "hello", "Chinese (Simplified)"), ("", "长城有多长", "Chinese (Simplified)"),
        ("en-US", "长城", "English"), ("", "こんにちは", "Japanese"),
        ("", "hello", "the same language as the user's question")])
    def test_language(self, locale: str, query: str, name: str) -> None:
        assert prompts.language_name(locale, query) == name
