"""Fusion of a vector and a keyword ranking: a table of pure functions, chosen by name (spec §3.5).

Inputs are ranked lists of ``(chunk_id, score)`` as the engines returned them (best first; a chunk may appear
more than once — the first occurrence sets its rank, the highest score its score). Output: ``(chunk_id,
fused)`` best first. Ties are broken by the better single rank, then the chunk id, so results are
deterministic.

- ``weighted_rrf`` — WeKnora's default: ``wV/(k+rV) + wK/(k+rK)`` (k = 60, 0.7 / 0.3).
- ``rrf`` — the same with equal weights (1/(k+r) each).
- ``convex`` — ``α·minmax(vector) + (1−α)·minmax(keyword)``; a chunk missing from a list gets 0 there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Ranked = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class FusionConfig:
    k: int = 60
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    alpha: float = 0.5

    def effective(self) -> FusionConfig:
        """WeKnora's fallbacks: k <= 0 → 60; a non-positive weight → its default."""
        return FusionConfig(k=self.k if self.k > 0 else 60,
                            vector_weight=self.vector_weight if self.vector_weight > 0 else 0.7,
                            keyword_weight=self.keyword_weight if self.keyword_weight > 0 else 0.3,
                            alpha=min(max(self.alpha, 0.0), 1.0))


def first_ranks(items: Ranked) -> tuple[dict[str, int], dict[str, float]]:
    """1-based rank of each chunk's first occurrence and its highest score."""
    ranks: dict[str, int] = {}
    best: dict[str, float] = {}
    for pos, (cid, score) in enumerate(items, start=1):
        ranks.setdefault(cid, pos)
        if cid not in best or score > best[cid]:
            best[cid] = score
    return ranks, best


def _sorted(scores: dict[str, float], rv: dict[str, int], rk: dict[str, int]) -> list[tuple[str, float]]:
    big = 1 << 30
    keyed = [(-s, min(rv.get(cid, big), rk.get(cid, big)), cid) for cid, s in scores.items()]
    keyed.sort()  # tuples compare in C: a key function per item cost more than the fusion itself
    return [(cid, -neg) for neg, _, cid in keyed]


def weighted_rrf(vector: Ranked, keyword: Ranked, cfg: FusionConfig) -> list[tuple[str, float]]:
    c = cfg.effective()
    rv, _ = first_ranks(vector)
    rk, _ = first_ranks(keyword)
    fused: dict[str, float] = {}
    for cid, r in rv.items():
        fused[cid] = c.vector_weight / (c.k + r)
    for cid, r in rk.items():
        fused[cid] = fused.get(cid, 0.0) + c.keyword_weight / (c.k + r)
    return _sorted(fused, rv, rk)


def rrf(vector: Ranked, keyword: Ranked, cfg: FusionConfig) -> list[tuple[str, float]]:
    return weighted_rrf(vector, keyword, FusionConfig(k=cfg.k, vector_weight=1.0, keyword_weight=1.0))


def _minmax(best: dict[str, float]) -> dict[str, float]:
    if not best:
        return {}
    lo, hi = min(best.values()), max(best.values())
    if hi - lo <= 1e-12:
        return dict.fromkeys(best, 1.0)
    return {cid: (s - lo) / (hi - lo) for cid, s in best.items()}


def convex(vector: Ranked, keyword: Ranked, cfg: FusionConfig) -> list[tuple[str, float]]:
    a = cfg.effective().alpha
    rv, bv = first_ranks(vector)
    rk, bk = first_ranks(keyword)
    nv, nk = _minmax(bv), _minmax(bk)
    fused = {cid: a * nv.get(cid, 0.0) + (1 - a) * nk.get(cid, 0.0) for cid in {*nv, *nk}}
    return _sorted(fused, rv, rk)


FUSIONS: dict[str, Callable[[Ranked, Ranked, FusionConfig], list[tuple[str, float]]]] = {
    "weighted_rrf": weighted_rrf,
    "rrf": rrf,
    "convex": convex,
}

# measured best on xquad-en and xquad-zh (docs/retrieval.md); weighted_rrf by config
DEFAULT_FUSION = "convex"


def fuse(mode: str | None, vector: Ranked, keyword: Ranked, cfg: FusionConfig) -> list[tuple[str, float]]:
    try:
        fn = FUSIONS[mode or DEFAULT_FUSION]
    except KeyError:
        raise ValueError(f"unknown fusion mode {mode!r}; known: {', '.join(sorted(FUSIONS))}") from None
    return fn(vector, keyword, cfg)


def dedupe_by_score(items: Ranked) -> list[tuple[str, float]]:
    """Single-list case (spec §3.5): one entry per chunk with its highest raw score, best first."""
    ranks, best = first_ranks(items)
    return _sorted(best, ranks, {})
