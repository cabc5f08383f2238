"""Search targets (spec §1.8), search over targets (§2.6) and local query expansion (§2.7)."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.knowledge import KBType
from knora.domain.search import SearchTarget
from knora.services.retrieval import expansion
from knora.services.retrieval.expansion import expand_queries, run_query_expansion
from knora.services.retrieval.targets import TargetSearch, build_targets, dedupe_results, search_targets


class TestExpandQueries:
    pytestmark = pytest.mark.unit

    def test_english_variants(self) -> None:
        v = expand_queries('How does the "quick sort" algorithm work, and why is it fast?')
        assert v[0] == "quick sort algorithm work and it fast"  # stopwords and 1-rune tokens dropped
        assert "quick sort" in v
        assert len(v) <= 5

    def test_chinese_question_word_and_jieba(self) -> None:
        v = expand_queries("什么是机器学习")
        assert "机器学习" in v  # question word stripped
        assert any(" " in x and "机器" in x for x in v)  # jieba keyword variant

    def test_limits(self) -> None:
        assert expand_queries("   ") == []
        assert expand_queries("ab") == []  # nothing of >= 3 bytes differs from the query
        long = "photosynthesis chlorophyll mitochondria ribosome cytoplasm membrane"
        v = expand_queries(long)
        # the keyword variant equals the query itself, so only segments remain, capped at 5
        assert v == ["photosynthesis", "chlorophyll", "mitochondria", "ribosome", "cytoplasm"]
        assert expand_queries("Same query", "same QUERY") == []  # the only variant equals the query


class TestTargets:
    pytestmark = pytest.mark.integration

    async def test_order_and_scopes(self, rc: Any, seed: Any) -> None:
        t = rc.default_tenant_id
        full, docs, tagged, faq = (await seed.kb("full"), await seed.kb("docs"), await seed.kb("tagged"),
                                   await seed.kb("faq", type=KBType.FAQ))
        k_docs, _ = await seed.doc(docs, ["a document chunk"])
        tag = await seed.tag(tagged, "t")
        k_tag, _ = await seed.doc(tagged, ["tagged chunk"], tag_id=tag.id)
        await seed.doc(tagged, ["untagged chunk"])
        ftag = await seed.tag(faq, "f")
        other = await seed.kb("foreign", tenant_id=await seed.tenant())
        k_full, _ = await seed.doc(full, ["in a fully searched kb"])
        targets = await build_targets(rc.search_service, t, [full.id, other.id], [k_docs.id, k_full.id],
                                      {tagged.id: [tag.id, tag.id, ""], faq.id: [ftag.id]})
        assert [(x.type, x.knowledge_base_id) for x in targets] == [
            ("knowledge_base", full.id), ("knowledge", docs.id), ("knowledge", tagged.id),
            ("knowledge_base", faq.id)]
        assert targets[0].disable_recall_thresholds is False
        assert targets[1].knowledge_ids == [k_docs.id]
        assert targets[1].disable_recall_thresholds
        assert targets[2].knowledge_ids == [k_tag.id]
        assert targets[2].scope_tag_ids == [tag.id]
        assert targets[3].tag_ids == [ftag.id]

    async def test_search_targets_merges_full_kbs(self, rc: Any, seed: Any) -> None:
        t = rc.default_tenant_id
        a, b, c = await seed.kb("a"), await seed.kb("b"), await seed.kb("c")
        await seed.doc(a, ["glaciers carve valleys"])
        await seed.doc(b, ["glaciers store fresh water"])
        kc, _ = await seed.doc(c, ["deserts are dry", "dunes move with wind"])
        calls: list[list[str]] = []
        orig = rc.search_service.search

        async def spy(tenant_id: int, params: Any) -> Any:
            calls.append(params.knowledge_base_ids or [params.knowledge_base_id])
            return await orig(tenant_id, params)

        rc.search_service.search = spy
        targets = [SearchTarget(knowledge_base_id=a.id, tenant_id=t), SearchTarget(knowledge_base_id=b.id,
                                                                                   tenant_id=t),
                   SearchTarget(type="knowledge", knowledge_base_id=c.id, tenant_id=t, knowledge_ids=[kc.id],
                                disable_recall_thresholds=True)]
        results, err = await search_targets(rc.search_service, t, targets, TargetSearch(query="glaciers"))
        assert err is None
        assert sorted(map(sorted, calls)) == sorted([sorted([a.id, b.id]), [c.id]])
        kbs = {r.knowledge_base_id for r in results}
        assert {a.id, b.id} <= kbs
        assert c.id in kbs  # thresholds off for the explicit document scope: its best chunk still comes back
        assert len(dedupe_results(results + results)) == len(dedupe_results(results))

    async def test_expansion_runs_variants(self, rc: Any, seed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        t = rc.default_tenant_id
        kb = await seed.kb("x")
        await seed.doc(kb, ["machine learning models learn from data"])
        seen: list[tuple[str, float | None, int]] = []
        orig = rc.search_service.search

        async def spy(tenant_id: int, params: Any) -> Any:
            seen.append((params.query_text, params.keyword_threshold, params.match_count))
            return await orig(tenant_id, params)

        rc.search_service.search = spy
        out = await run_query_expansion(rc.search_service, t, [SearchTarget(knowledge_base_id=kb.id,
                                                                            tenant_id=t)],
                                        rewrite_query="what is machine learning, and how do models learn?",
                                        keyword_threshold=0.5, embedding_top_k=10, rerank_top_k=30)
        assert 1 <= len(seen) <= expansion.MAX_VARIANTS
        assert all(th == pytest.approx(0.4) and mc == 60 for _, th, mc in seen)
        assert out
        assert all(r.knowledge_base_id == kb.id for r in out)
