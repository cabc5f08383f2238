"""FAQ entries: CRUD, import, vector-only indexing, negative questions and iterative re-retrieval (spec
§3.6)."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.domain.knowledge import FAQConfig, KBType
from knora.domain.search import SearchParams
from knora.services.retrieval.faq import FaqEntryIn, index_texts, render
from tests.polling import eventually

pytestmark = pytest.mark.integration

RESET = FaqEntryIn(standard_question="How do I reset my password?",
                   similar_questions=["forgot password", "password reset link"],
                   negative_questions=["How do I reset my router?"],
                   answers=["Use the 'Forgot password' link on the sign-in page."])


class TestFaqRendering:
    pytestmark = pytest.mark.unit

    def test_content_and_index_rows(self) -> None:
        e = RESET.cleaned()
        assert render(e, FAQConfig()) == ("Q: How do I reset my password?\nSimilar Questions:\n"
                                          "- forgot password\n- password reset link\nAnswers:\n"
                                          "- Use the 'Forgot password' link on the sign-in page.")
        assert "router" not in render(e, FAQConfig())
        assert index_texts(e, FAQConfig()) == [("How do I reset my password?\nforgot password\n"
                                                "password reset link\n"
                                                "Use the 'Forgot password' link on the sign-in page.")]
        sep = index_texts(e, FAQConfig(index_mode="question_only", question_index_mode="separate"))
        assert sep == ["How do I reset my password?", "forgot password", "password reset link"]

    def test_cleaning(self) -> None:
        e = FaqEntryIn(standard_question=" Q ", similar_questions=["q", "a", "a ", ""]).cleaned()
        assert e.standard_question == "Q"
        assert e.similar_questions == ["a"]
        with pytest.raises(ValidationFailed):
            FaqEntryIn(standard_question="  ").cleaned()


class TestFaqService:
    async def test_crud_and_search(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb("faq", type=KBType.FAQ)
        svc = rc.faq_service
        t = rc.default_tenant_id
        created = await svc.create(t, kb.id, RESET)
        other = await svc.create(t, kb.id, FaqEntryIn(standard_question="Where is the office?",
                                                      answers=["Berlin"]))
        assert created["id"] == 1
        assert other["id"] == 2
        items, total = await svc.list_entries(t, kb.id, page=1, page_size=10)
        assert total == 2
        assert items[0]["standard_question"] == "How do I reset my password?"
        res = await svc.search(t, kb.id, "I forgot my password")
        assert res[0].id == created["chunk_id"]
        assert res[0].chunk_type == "faq"
        assert set(res[0].scores) == {"vector", "fused"}  # FAQ KBs: vector only
        updated = await svc.update(t, kb.id, 2, FaqEntryIn(standard_question="Where is the headquarters?"))
        assert updated["chunk_id"] == other["chunk_id"]
        assert (await svc.get(t, kb.id, 2))["standard_question"] \
            == "Where is the headquarters?"
        assert await svc.delete(t, kb.id, [1]) == 1
        with pytest.raises(NotFound):
            await svc.get(t, kb.id, 1)
        assert all(r.id != created["chunk_id"] for r in await svc.search(t, kb.id, "forgot password"))

    async def test_negative_questions_are_exact(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb("faq", type=KBType.FAQ)
        await rc.faq_service.create(rc.default_tenant_id, kb.id, RESET)
        svc = rc.search_service
        hit = await svc.search(rc.default_tenant_id, SearchParams(knowledge_base_id=kb.id,
                                                                  query_text="How do I reset my router!",
                                                                  vector_threshold=0))
        assert hit  # not the negative question exactly: kept
        miss = await svc.search(rc.default_tenant_id, SearchParams(knowledge_base_id=kb.id,
                                                                   query_text="  how do i RESET my router?  ",
                                                                   vector_threshold=0))
        assert miss == []

    async def test_similar_questions_unique_and_kb_type(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb("faq", type=KBType.FAQ)
        await rc.faq_service.create(rc.default_tenant_id, kb.id, RESET)
        with pytest.raises(ValidationFailed, match="already used"):
            await rc.faq_service.create(rc.default_tenant_id, kb.id, FaqEntryIn(
                standard_question="Password help", similar_questions=["Forgot Password"]))
        doc_kb = await seed.kb("docs")
        with pytest.raises(BadRequest):
            await rc.faq_service.create(rc.default_tenant_id, doc_kb.id, RESET)
        other = await seed.tenant()
        with pytest.raises(NotFound):
            await rc.faq_service.list_entries(other, kb.id, page=1, page_size=10)

    async def test_import_replace(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb("faq", type=KBType.FAQ)
        svc = rc.faq_service
        t = rc.default_tenant_id
        await svc.create(t, kb.id, RESET)
        task = await svc.start_import(t, kb.id, [FaqEntryIn(standard_question=f"question number {i}")
                                                 for i in range(3)], mode="replace")
        await eventually(lambda: svc.progress(t, task)["status"] != "running", interval=0.02)
        assert svc.progress(t, task)["status"] == "completed"
        items, total = await svc.list_entries(t, kb.id, page=1, page_size=10)
        assert total == 3
        assert items[0]["standard_question"] == "question number 0"
        with pytest.raises(NotFound):
            svc.progress(await seed.tenant(), task)

    async def test_iterative_retrieval_fills_match_count(self, rc: Any, seed: Any) -> None:
        """With "separate" indexing one FAQ owns many rows; the first pool holds too few distinct FAQs."""
        kb = await seed.kb("faq", type=KBType.FAQ)
        async with rc.sessions.begin() as s:
            from knora.adapters.db.tables import KnowledgeBaseRow

            row = await s.get(KnowledgeBaseRow, kb.id)
            row.faq_config = {"index_mode": "question_only", "question_index_mode": "separate"}
        svc = rc.faq_service
        t = rc.default_tenant_id
        big = FaqEntryIn(standard_question="shipping cost", similar_questions=[f"shipping cost variant {i}"
                                                                               for i in range(60)])
        await svc.create(t, kb.id, big)
        for i in range(4):
            await svc.create(t, kb.id, FaqEntryIn(standard_question=f"shipping time {i}"))
        calls: list[int] = []
        orig = rc.search_service._retrieve

        async def spy(groups: Any, *, top_k: int | None = None) -> Any:
            calls.append(top_k or 0)
            return await orig(groups, top_k=top_k)

        rc.search_service._retrieve = spy
        res = await rc.search_service.search(t, SearchParams(knowledge_base_id=kb.id,
                                                             query_text="shipping cost",
                                                             match_count=5, vector_threshold=0))
        # first pool = max(5*5, 50) = 50 rows, all could be variants of one FAQ → re-retrieval at 15, 30, …
        assert len({r.id for r in res}) == 5
        assert calls[0] == 0
        assert calls[1:2] == [15]
