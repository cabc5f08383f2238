"""HybridSearch on a real SQLite store and engine, with the local:hash embedder."""

from __future__ import annotations

from typing import Any

import pytest

from knora.domain.errors import AppError, BadRequest, NotFound, ValidationFailed
from knora.domain.knowledge import ChunkType, ParseStatus
from knora.domain.search import MatchType, SearchParams
from knora.ports.retrieval import EngineQuery
from knora.services.retrieval.hybrid import HybridSearch, candidate_pool

pytestmark = pytest.mark.integration

TEXTS = [
    "Photosynthesis converts sunlight into chemical energy in plants.",
    "The French Revolution began in 1789 with the storming of the Bastille.",
    "Quantum computers use qubits that can be in superposition.",
    "长城是中国古代的伟大建筑，全长两万多公里。",
]


def p(kb_id: str, q: str, **kw: Any) -> SearchParams:
    return SearchParams(knowledge_base_id=kb_id, query_text=q, **kw)


class TestHybridSearch:
    async def test_hybrid_fills_scores_and_match_type(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        await seed.doc(kb, TEXTS, title="Facts")
        svc: HybridSearch = rc.search_service
        res = await svc.search(rc.default_tenant_id, p(kb.id, "When did the French Revolution begin?",
                                                      skip_context_enrichment=True))
        assert res
        assert "French Revolution" in res[0].content
        top = res[0]
        assert set(top.scores) == {"vector", "keyword", "fused"}
        assert top.score == top.scores["fused"]
        assert top.match_type == MatchType.EMBEDDING
        assert top.knowledge_title == "Facts"
        assert top.knowledge_base_id == kb.id
        assert top.matched_content.startswith("Facts\n")

    async def test_chinese_keyword_path(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb(vector=False)
        await seed.doc(kb, TEXTS)
        res = await rc.search_service.search(rc.default_tenant_id,
                                             p(kb.id, "长城有多长", keyword_threshold=0.0))
        assert [r.content for r in res][:1] == [TEXTS[3]]
        assert res[0].match_type == MatchType.KEYWORDS
        assert set(res[0].scores) == {"keyword", "fused"}
        assert res[0].score == res[0].scores["keyword"]  # single list: raw score kept

    async def test_single_path_keeps_raw_scores(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        await seed.doc(kb, TEXTS)
        res = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "qubits superposition",
                                                                    disable_keywords_match=True))
        assert res[0].scores.keys() == {"vector", "fused"}
        assert res[0].score == res[0].scores["vector"]

    async def test_thresholds(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        await seed.doc(kb, TEXTS, title="Facts")  # a fixed title: seed's random one shifts the hashed vectors
        q = "plants energy volcano glacier"  # the best row covers about half of the query
        loose = await rc.search_service.search(rc.default_tenant_id, p(kb.id, q, vector_threshold=0.0,
                                                                      keyword_threshold=0.0,
                                                                      skip_context_enrichment=True))
        strict = await rc.search_service.search(rc.default_tenant_id, p(kb.id, q, vector_threshold=0.9,
                                                                       keyword_threshold=0.9))
        assert len(loose) > 1
        assert strict == []
        kw_only = await rc.search_service.search(rc.default_tenant_id, p(kb.id, q, keyword_threshold=0.3,
                                                                        disable_vector_match=True,
                                                                        skip_context_enrichment=True))
        assert [r.content for r in kw_only] == [TEXTS[0]]
        assert 0.3 <= kw_only[0].score < 0.9

    async def test_keyword_scores_order_uncapped_and_show_capped(self, rc: Any, seed: Any) -> None:
        """Rows that repeat the query's terms score BM25 above Σ idf: capped at 1 they would tie before the
        fusion's min-max; the engine's order keeps them apart and the public score stays in [0, 1]."""
        kb = await seed.kb()
        texts = ["glacier " * n + "ice sheet" for n in (6, 3, 1)] + TEXTS
        await seed.doc(kb, texts, title="Ice")
        kw = await rc.search_service.search(rc.default_tenant_id, p(
            kb.id, "glacier", disable_vector_match=True, keyword_threshold=0.0, skip_context_enrichment=True))
        assert [r.content for r in kw][:3] == texts[:3]  # more repetitions rank higher: no tie at the cap
        assert all(0.0 <= r.score <= 1.0 and r.score == r.scores["keyword"] for r in kw)
        raw = await rc.retrieval.search(EngineQuery(mode="keyword", knowledge_base_ids=[kb.id],
                                                    text="glacier", top_k=10, threshold=0.0))
        assert raw[0].score > raw[1].score > 1.0  # what the fusion sees
        hybrid = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "glacier", keyword_threshold=0,
                                                                       vector_threshold=0,
                                                                       skip_context_enrichment=True))
        assert all(r.scores.get("keyword", 0.0) <= 1.0 and 0.0 <= r.score <= 1.0 for r in hybrid)

    def test_candidate_pool(self) -> None:
        assert [candidate_pool(n, 1) for n in (1, 10, 50, 100, 500)] == [50, 50, 50, 100, 500]
        assert candidate_pool(10, 3) == 150  # per knowledge base
        assert candidate_pool(200, 3) == 500  # at most 500

    @pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
    async def test_threshold_out_of_range_is_400(self, rc: Any, seed: Any, bad: float) -> None:
        kb = await seed.kb()
        with pytest.raises(ValidationFailed):
            await rc.search_service.search(rc.default_tenant_id, p(kb.id, "x", vector_threshold=bad))

    async def test_bad_queries(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        for q in ("", "   \n"):
            with pytest.raises(BadRequest):
                await rc.search_service.search(rc.default_tenant_id, p(kb.id, q))
        with pytest.raises(BadRequest, match="longer"):
            await rc.search_service.search(rc.default_tenant_id, p(kb.id, "a" * 100_001))

    async def test_match_count_clamped(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        await seed.doc(kb, [f"alpha topic number {i}" for i in range(60)])
        svc = rc.search_service
        zero = await svc.search(rc.default_tenant_id, p(kb.id, "alpha topic", match_count=0,
                                                        vector_threshold=0,
                                                       keyword_threshold=0, skip_context_enrichment=True))
        assert len(zero) == 50  # ≤ 0 → default 50
        huge = await svc.search(rc.default_tenant_id, p(kb.id, "alpha topic", match_count=10_000,
                                                        vector_threshold=0,
                                                       keyword_threshold=0, skip_context_enrichment=True))
        assert len(huge) == 60
        two = await svc.search(rc.default_tenant_id, p(kb.id, "alpha topic", match_count=2))
        assert len([r for r in two if r.match_type in (MatchType.EMBEDDING, MatchType.KEYWORDS)]) == 2

    async def test_foreign_and_unknown_kb_are_404(self, rc: Any, seed: Any) -> None:
        other = await seed.tenant()
        theirs = await seed.kb("theirs", tenant_id=other)
        await seed.doc(theirs, TEXTS)
        mine = await seed.kb("mine")
        with pytest.raises(NotFound):
            await rc.search_service.search(rc.default_tenant_id, p(theirs.id, "plants"))
        with pytest.raises(NotFound):
            await rc.search_service.search(rc.default_tenant_id, p("no-such-kb", "plants"))
        with pytest.raises(NotFound):
            await rc.search_service.search(rc.default_tenant_id, p(mine.id, "plants",
                                                                  knowledge_base_ids=[mine.id, theirs.id]))
        assert await rc.search_service.search(other, p(theirs.id, "photosynthesis plants"))

    async def test_multi_kb_needs_one_embedding_model(self, rc: Any, seed: Any) -> None:
        a = await seed.kb("a", embedding_model_id="local:hash")
        b = await seed.kb("b", embedding_model_id="local:other")
        with pytest.raises(BadRequest, match="different embedding models"):
            await rc.search_service.search(rc.default_tenant_id, p(a.id, "x", knowledge_base_ids=[a.id,
                                                                                                  b.id]))

    async def test_the_builtin_embedding_id_and_the_settings_spec_are_one_model(self, rc: Any,
                                                                                seed: Any) -> None:
        """A knowledge base made before issue 13 stored the settings' embedder spec; a new one stores the id
        ``GET /models`` lists it by (``builtin-embedding``): they search together."""
        a = await seed.kb("a", embedding_model_id=rc.settings.embedder)
        b = await seed.kb("b", embedding_model_id="builtin-embedding")
        await seed.doc(a, TEXTS[:2])
        await seed.doc(b, TEXTS[2:])
        res = await rc.search_service.search(rc.default_tenant_id, p(a.id, "qubits superposition Bastille",
                                                                    knowledge_base_ids=[a.id, b.id]))
        assert {r.knowledge_base_id for r in res} == {a.id, b.id}

    async def test_multi_kb_search(self, rc: Any, seed: Any) -> None:
        a, b = await seed.kb("a"), await seed.kb("b")
        await seed.doc(a, TEXTS[:2])
        await seed.doc(b, TEXTS[2:])
        res = await rc.search_service.search(rc.default_tenant_id, p(a.id, "qubits superposition Bastille",
                                                                    knowledge_base_ids=[a.id, b.id]))
        assert {r.knowledge_base_id for r in res} == {a.id, b.id}

    async def test_hydration_drops_unsearchable(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        _, done = await seed.doc(kb, ["zebra stripes pattern"])
        await seed.doc(kb, ["zebra migration routes"], status=ParseStatus.PROCESSING)
        await seed.doc(kb, ["zebra parent section"], chunk_type=ChunkType.PARENT_TEXT)
        _, off = await seed.doc(kb, ["zebra disabled chunk"])
        await seed.update_chunk(off[0].id, is_enabled=False)
        res = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "zebra", vector_threshold=0,
                                                                    keyword_threshold=0))
        assert [r.id for r in res] == [done[0].id]

    async def test_enrichment_adds_neighbours(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        _, chunks = await seed.doc(kb, ["intro about cooking", "the secret ingredient is saffron",
                                        "closing words"],
                                   index=False)
        await seed.index(kb, (await rc.search_service.store.knowledge([chunks[0].knowledge_id]))[0],
                         [chunks[1]])
        q = p(kb.id, "secret ingredient saffron")
        enriched = await rc.search_service.search(rc.default_tenant_id, q)
        assert enriched[0].id == chunks[1].id
        nearby = {r.id: r for r in enriched[1:]}
        assert set(nearby) == {chunks[0].id, chunks[2].id}
        assert all(r.match_type == MatchType.NEARBY_CHUNK and r.score == 0 for r in nearby.values())
        plain = await rc.search_service.search(rc.default_tenant_id, q.model_copy(
            update={"skip_context_enrichment": True}))
        assert [r.id for r in plain] == [chunks[1].id]

    async def test_filters_by_knowledge_and_tag(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        tag = await seed.tag(kb, "t")
        k1, _ = await seed.doc(kb, ["volcano eruption lava"])
        _, c2 = await seed.doc(kb, ["volcano ash cloud"], tag_id=tag.id)
        res = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "volcano", knowledge_ids=[k1.id]))
        assert {r.knowledge_id for r in res} == {k1.id}
        res = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "volcano", tag_ids=[tag.id]))
        assert [r.id for r in res] == [c2[0].id]

    async def test_tenant_fusion_config(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb()
        await seed.doc(kb, TEXTS)
        await seed.set_tenant_config(rc.default_tenant_id, {"fusion": "weighted_rrf"})
        res = await rc.search_service.search(rc.default_tenant_id, p(kb.id, "French Revolution Bastille",
                                                                    skip_context_enrichment=True))
        assert res[0].score == pytest.approx(0.7 / 61 + 0.3 / 61)
        # a call's own fusion mode wins over the tenant's (the evaluation runner compares modes this way)
        res = await rc.search_service.search(rc.default_tenant_id, p(
            kb.id, "French Revolution Bastille", skip_context_enrichment=True, fusion="rrf"))
        assert res[0].score == pytest.approx(2 / 61)

    async def test_embedding_failure_fails_the_call(self, rc: Any, seed: Any) -> None:
        kb = await seed.kb(embedding_model_id="nope:model")
        with pytest.raises((AppError, ValueError)):
            await rc.search_service.search(rc.default_tenant_id, p(kb.id, "plants"))
