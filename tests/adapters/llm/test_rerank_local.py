"""The built-in local reranker (``builtin-rerank``): BM25 over the candidates mixed with dense cosine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from knora.adapters.embedders.hash import HashEmbedder
from knora.adapters.llm.rerank_local import LocalReranker, bm25_scores, mix, search_order
from knora.ports.embedder import Embedder, Vector

DOCS = ["The cat sat on the mat.", "Annual leave is 20 days per year for every employee.",
        "Parking is free on weekends.", "年假每年二十天。"]


class CountingEmbedder:
    """The hash embedder, counting the passages it was asked to embed (the cache must spare repeats)."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(dimension=256)
        self.passages = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed_passages(self, texts: Sequence[str]) -> Vector:
        self.passages += len(texts)
        return await self.inner.embed_passages(texts)

    async def embed_query(self, text: str) -> Vector:
        return await self.inner.embed_query(text)


class TestBm25:
    def test_the_document_with_the_query_terms_scores_highest(self) -> None:
        scores = bm25_scores("how many days of annual leave", DOCS)
        assert max(range(len(DOCS)), key=lambda i: scores[i]) == 1
        assert scores[0] == 0.0

    def test_chinese_is_tokenised(self) -> None:
        scores = bm25_scores("年假几天", DOCS)
        assert max(range(len(DOCS)), key=lambda i: scores[i]) == 3


class TestLocalReranker:
    async def test_orders_best_first_with_scores_in_unit_range(self) -> None:
        embedder = CountingEmbedder()

        def make() -> Embedder:
            return embedder

        r = LocalReranker(make)
        scores = await r.rerank("annual leave days", DOCS)
        assert [s.index for s in scores][0] == 1
        assert sorted(s.index for s in scores) == [0, 1, 2, 3]
        assert all(0.5 <= s.score <= 1.0 for s in scores)  # reorders; a 0.3 threshold never drops one
        assert scores == sorted(scores, key=lambda s: -s.score)
        assert r.model_id == "builtin-rerank"
        assert (await r.rerank("parking", DOCS, top_n=2))[0].index == 2
        assert embedder.passages == len(DOCS)  # the second call embedded nothing again

    @pytest.mark.parametrize("weight", [0.0, 1.0])
    async def test_either_signal_alone(self, weight: float) -> None:
        r = LocalReranker(CountingEmbedder, dense_weight=weight)
        assert (await r.rerank("free parking on weekends", DOCS))[0].index == 2

    async def test_no_documents(self) -> None:
        assert await LocalReranker(CountingEmbedder).rerank("q", []) == []

    async def test_the_cache_is_bounded(self) -> None:
        embedder = CountingEmbedder()
        r = LocalReranker(lambda: embedder, cache_size=2)
        await r.rerank("q", DOCS)
        await r.rerank("q", DOCS[:1])
        assert embedder.passages == len(DOCS) + 1  # the first document had been evicted


class TestMix:
    def test_the_prior_weight_moves_from_the_signals_to_the_search_order(self) -> None:
        dense, lexical = [0.1, 0.2, 0.9], [0.0, 0.5, 1.0]  # both signals prefer the last candidate
        assert max(range(3), key=lambda i: mix(dense, lexical, 0.5, 0.0)[i]) == 2
        assert mix(dense, lexical, 0.5, 1.0) == [1.0, 0.5, 0.0]  # the order the candidates came in

    def test_one_candidate(self) -> None:
        assert mix([0.3], [0.0], 0.5, 0.5) == [0.75]


class TestBuiltin:
    async def test_builtin_rerank_keeps_the_search_order_and_embeds_nothing(self) -> None:
        """``builtin-rerank`` changes no order (measured: no local re-scoring beat the search order on every
        set), so an agent that uses it loses nothing; its scores stay above any rerank threshold."""
        embedder = CountingEmbedder()
        r = LocalReranker(lambda: embedder, prior_weight=1.0)
        scores = await r.rerank("free parking on weekends", DOCS)
        assert [s.index for s in scores] == [0, 1, 2, 3]
        assert all(s.score >= 0.5 for s in scores)
        assert embedder.passages == 0
        assert search_order().model_id == "builtin-rerank"

    async def test_the_registry_resolves_both_local_rerankers(self, make_settings: Any) -> None:
        from knora.adapters.llm.registry import RerankerRegistry

        reg = RerankerRegistry(make_settings())
        builtin = await reg.get("builtin-rerank")
        assert builtin is not None
        assert builtin is await reg.get("builtin-rerank")
        rescoring = await reg.get("local:e5-bm25")
        assert rescoring is not None
        assert rescoring.model_id == "local:e5-bm25"
        assert await reg.get(None) is None  # neither is a default
        await reg.close()
