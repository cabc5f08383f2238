"""The knowledge context the model reads (services/pipeline/contexts.py)."""

from __future__ import annotations

import pytest

from knora.domain.knowledge import Chunk
from knora.domain.search import SearchResult
from knora.services.citations.registry import ReferenceRegistry
from knora.services.pipeline.contexts import render_context

pytestmark = pytest.mark.unit

BODY = "Annual leave is 25 days; requests go to HR two weeks ahead."


def result(content: str, matched: str, title: str = "Handbook", **kw: object) -> SearchResult:
    return SearchResult(id="c1", content=content, knowledge_id="d1", knowledge_title=title,
                        knowledge_base_id="kb", matched_content=matched, **kw)  # type: ignore[arg-type]


class TestMatch:
    def test_a_titled_passage_is_sent_once(self) -> None:
        """The index text is title + content: both are already in the context, so no <match>."""
        indexed = Chunk(tenant_id=1, knowledge_base_id="kb", knowledge_id="d1", content=BODY
                        ).index_content("Handbook")
        xml = render_context([result(BODY, indexed)], ReferenceRegistry()).xml
        assert xml.count("Annual leave is 25 days") == 1
        assert "<match>" not in xml

    def test_a_merged_passage_does_not_repeat_its_first_chunk(self) -> None:
        merged = BODY + "\nCarry-over is capped at 5 days."
        xml = render_context([result(merged, f"Handbook\n{BODY}")], ReferenceRegistry()).xml
        assert xml.count("Annual leave is 25 days") == 1

    def test_a_context_header_is_kept_without_the_body(self) -> None:
        indexed = Chunk(tenant_id=1, knowledge_base_id="kb", knowledge_id="d1", content=BODY,
                        context_header="Handbook > Leave > Annual").index_content("Handbook")
        xml = render_context([result(BODY, indexed)], ReferenceRegistry()).xml
        assert "<match>Handbook &gt; Leave &gt; Annual</match>" in xml
        assert xml.count("Annual leave is 25 days") == 1

    def test_an_faq_question_that_matched_is_shown(self) -> None:
        xml = render_context([result("25 days a year.", "How many days of annual leave do I get?",
                                     chunk_type="faq")], ReferenceRegistry()).xml
        assert "<match>How many days of annual leave do I get?</match>" in xml
