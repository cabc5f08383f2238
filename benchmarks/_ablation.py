"""The fusion ablation and the in-run reference of ``benchmarks/retrieval.py`` (issue #19).

Both work on the same passages, questions, judgements and cached vectors (``_vectors.py``) as the measurement
through Knora, in numpy:

- ``Bm25`` scores a corpus exactly as Knora's keyword index does (FTS5's BM25: k1, b, FTS5's idf clamped to
  1e-6, distinct query terms, the score divided by the query's Σ idf) with the parameters as knobs, so one
  factor at a time can be changed: k1, b, idf (FTS5's or Lucene's ``log(1 + …)``), tokenisation (Knora's
  stemmed tokens, unstemmed, a longer stopword list), the keyword cap at 1, the fusion candidate pool,
  normalisation (min-max, z-score, RRF, WeKnora's weighted RRF), α and the two thresholds.
- ``reference`` is what a user would write in 100 lines: bm25s (Lucene BM25, English stopwords, Snowball
  stems;
  jieba tokens for Chinese) and a numpy dot product, each path's top ``match_count``, min-max, α = 0.5.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from knora.adapters.retrieval.tokenize import ENGLISH_STOPWORDS, query_terms, tokenize
from knora.services.evaluation.dataset import Query
from knora.services.evaluation.metrics import retrieval_metrics

REPORTED = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


@dataclass
class SetData:
    name: str
    ids: list[str]  # corpus ids, row order of ``passages``
    texts: list[str]  # what Knora indexes (title + text)
    queries: list[Query]
    qrels: dict[str, dict[str, float]]
    passages: np.ndarray  # (n, dim) unit rows
    query_vecs: np.ndarray  # (len(queries), dim)


# --- keyword scoring --------------------------------------------------------------------------------------
def _big_stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS) | ENGLISH_STOPWORDS


Tokenizer = Callable[[str, bool], list[str]]  # (text, is_query) → tokens


def tok_knora(text: str, is_query: bool) -> list[str]:
    return query_terms(text) if is_query else tokenize(text)


def tok_nostem(text: str, is_query: bool) -> list[str]:
    toks = tokenize(text, drop_stopwords=is_query, stem=False) or tokenize(text, stem=False)
    return list(dict.fromkeys(toks)) if is_query else toks


def tok_bigstop(text: str, is_query: bool) -> list[str]:
    """Knora's tokens with a 500-word English stopword list dropped from queries *and* passages (Lucene
    style: lengths change too)."""
    stop = _big_stopwords()
    drop = {t for w in stop for t in tokenize(w)} | stop
    toks = [t for t in tokenize(text) if t not in drop]
    if is_query:
        return list(dict.fromkeys(toks)) or query_terms(text)
    return toks


TOKENIZERS: dict[str, Tokenizer] = {"knora": tok_knora, "nostem": tok_nostem, "bigstop": tok_bigstop}


class Bm25:
    """Term-by-document BM25 weights for one tokenisation; ``weights(k1, b, idf)`` is cached per setting."""

    def __init__(self, texts: Sequence[str], tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = []
        for i, text in enumerate(texts):
            toks = tokenizer(text, False)
            lengths.append(len(toks))
            counts: dict[int, int] = {}
            for t in toks:
                j = self.vocab.setdefault(t, len(self.vocab))
                counts[j] = counts.get(j, 0) + 1
            for j, c in counts.items():
                rows.append(i)
                cols.append(j)
                vals.append(c)
        self.n = len(texts)
        self.tf = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                                shape=(self.n, max(1, len(self.vocab))))
        self.dl = np.asarray(lengths, dtype=np.float64)
        self.df = np.bincount(cols, minlength=self.tf.shape[1]).astype(np.float64)
        self._cache: dict[tuple[float, float, str], sp.csc_matrix] = {}

    def idf(self, df: np.ndarray | float, kind: str) -> np.ndarray:
        raw = (self.n - np.asarray(df) + 0.5) / (np.asarray(df) + 0.5)
        if kind == "lucene":
            return np.log1p(raw)
        return np.maximum(np.log(raw), 1e-6)  # FTS5

    def weights(self, k1: float, b: float, idf: str) -> sp.csc_matrix:
        key = (k1, b, idf)
        if key not in self._cache:
            tf = self.tf.tocoo()
            avgdl = self.dl.mean() if self.n else 1.0
            denom = tf.data + k1 * (1 - b + b * self.dl[tf.row] / max(avgdl, 1e-9))
            data = self.idf(self.df, idf)[tf.col] * tf.data * (k1 + 1) / denom
            self._cache[key] = sp.csc_matrix((data, (tf.row, tf.col)), shape=self.tf.shape)
        return self._cache[key]

    def score(self, query: str, k1: float, b: float, idf: str) -> tuple[np.ndarray, float]:
        """BM25 of every passage and the query's Σ idf (terms absent from the corpus count, as in Knora)."""
        terms = self.tokenizer(query, True)
        cols = [self.vocab[t] for t in terms if t in self.vocab]
        absent = len(terms) - len(cols)
        norm = float(self.idf(self.df[cols], idf).sum() + absent * self.idf(0.0, idf)) if terms else 0.0
        if not cols:
            return np.zeros(self.n), norm
        return np.asarray(self.weights(k1, b, idf)[:, cols].sum(axis=1)).ravel(), norm


# --- one configuration --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    tokens: str = "knora"
    k1: float = 1.2
    b: float = 0.75
    idf: str = "fts5"
    cap: bool = True  # keyword score capped at 1 before fusion (Knora 0.1)
    pool_factor: int = 5  # candidates per path: max(factor × match_count, 50), at most 500 (Knora 0.1: 5)
    norm: str = "minmax"  # minmax | zscore | rrf | wrrf
    alpha: float = 0.5  # vector weight of the convex combination
    vector_threshold: float = 0.0
    keyword_threshold: float = 0.0
    match_count: int = 100

    @property
    def pool(self) -> int:
        return min(max(self.pool_factor * self.match_count, 50), 500)

    def label(self, base: Config) -> str:
        diff = [f"{k}={v}" for k, v in self.__dict__.items() if getattr(base, k) != v]
        return ",".join(diff) or "baseline"


def _top(scores: np.ndarray, k: int, keep: np.ndarray) -> np.ndarray:
    idx = np.flatnonzero(keep)
    if len(idx) > k:
        idx = idx[np.argpartition(-scores[idx], k - 1)[:k]]
    return idx[np.lexsort((idx, -scores[idx]))]


def _normalise(vals: np.ndarray, how: str) -> np.ndarray:
    if len(vals) == 0:
        return vals
    if how == "zscore":
        sd = vals.std()
        return (vals - vals.mean()) / sd if sd > 1e-12 else np.zeros_like(vals)
    lo, hi = vals.min(), vals.max()
    return (vals - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(vals)


def fuse_one(cfg: Config, vscores: np.ndarray, kscores: np.ndarray, knorm: float) -> list[int]:
    """Row indices of the fused top ``match_count``, best first."""
    kn = kscores / knorm if knorm > 0 else kscores
    kcmp = np.minimum(kn, 1.0)  # thresholds compare the capped score (Knora's semantics)
    vi = _top(vscores, cfg.pool, vscores >= cfg.vector_threshold)
    ki = _top(kn, cfg.pool, (kscores > 0) & (kcmp >= cfg.keyword_threshold))
    if len(vi) == 0 or len(ki) == 0:
        only = vi if len(vi) else ki
        return only[:cfg.match_count].tolist()
    fused: dict[int, float] = {}
    if cfg.norm in ("rrf", "wrrf"):
        wv, wk = (0.7, 0.3) if cfg.norm == "wrrf" else (1.0, 1.0)
        for r, i in enumerate(vi, 1):
            fused[int(i)] = wv / (60 + r)
        for r, i in enumerate(ki, 1):
            fused[int(i)] = fused.get(int(i), 0.0) + wk / (60 + r)
    else:
        kv = kcmp[ki] if cfg.cap else kn[ki]
        nv, nk = _normalise(vscores[vi], cfg.norm), _normalise(kv, cfg.norm)
        miss_v = nv.min() if cfg.norm == "zscore" else 0.0
        miss_k = nk.min() if cfg.norm == "zscore" else 0.0
        dv = dict(zip(vi.tolist(), nv.tolist(), strict=True))
        dk = dict(zip(ki.tolist(), nk.tolist(), strict=True))
        for i in dv.keys() | dk.keys():
            fused[i] = cfg.alpha * dv.get(i, miss_v) + (1 - cfg.alpha) * dk.get(i, miss_k)
    return sorted(fused, key=lambda i: (-fused[i], i))[:cfg.match_count]


def mean_metrics(ranked: list[list[str]], ds: SetData) -> dict[str, float]:
    """The mean of ``REPORTED`` over the set's questions (the evaluation service's metric code)."""
    tot: dict[str, float] = {}
    for q, r in zip(ds.queries, ranked, strict=True):
        for k, v in retrieval_metrics(r, ds.qrels[q.id]).items():
            if k in REPORTED:
                tot[k] = tot.get(k, 0.0) + v
    return {k: round(v / len(ranked), 4) for k, v in tot.items()}


@dataclass
class Evaluator:
    ds: SetData
    _bm25: dict[str, Bm25] = field(default_factory=dict)
    _kw: dict[tuple[str, float, float, str], list[tuple[np.ndarray, float]]] = field(default_factory=dict)

    def _keyword(self, cfg: Config) -> list[tuple[np.ndarray, float]]:
        key = (cfg.tokens, cfg.k1, cfg.b, cfg.idf)
        if key not in self._kw:
            if cfg.tokens not in self._bm25:
                self._bm25[cfg.tokens] = Bm25(self.ds.texts, TOKENIZERS[cfg.tokens])
            bm = self._bm25[cfg.tokens]
            self._kw[key] = [bm.score(q.text, cfg.k1, cfg.b, cfg.idf) for q in self.ds.queries]
        return self._kw[key]

    def run(self, cfg: Config) -> dict[str, float]:
        kw = self._keyword(cfg)
        dense = self.ds.query_vecs @ self.ds.passages.T
        ranked = [[self.ds.ids[i] for i in fuse_one(cfg, dense[j], s, n)] for j, (s, n) in enumerate(kw)]
        return mean_metrics(ranked, self.ds)


FACTORS: dict[str, list[object]] = {
    "cap": [True, False],
    "pool_factor": [1, 2, 3, 5],
    "match_count": [10, 100],
    "norm": ["minmax", "zscore", "rrf", "wrrf"],
    "alpha": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
    "k1": [0.9, 1.2, 1.5, 2.0],
    "b": [0.3, 0.5, 0.75, 0.9],
    "idf": ["fts5", "lucene"],
    "tokens": ["knora", "nostem", "bigstop"],
    "keyword_threshold": [0.0, 0.1, 0.2, 0.3],
    "vector_threshold": [0.0, 0.2, 0.3, 0.5, 0.7],
}


# what Knora ships (hybrid.candidate_pool, uncapped keyword scores, DEFAULT_*_THRESHOLD)
CHOSEN = Config(cap=False, pool_factor=1, vector_threshold=0.15, keyword_threshold=0.05)

# the factors that interact (fusion inputs), crossed, at the chat pipeline's match count and at 100
GRID: dict[str, list[object]] = {
    "match_count": [10, 100],
    "cap": [True, False],
    "norm": ["minmax", "zscore"],
    "pool_factor": [1, 2, 5],
    "alpha": [0.4, 0.5, 0.6],
}


def _grid(base: Config) -> list[Config]:
    configs = [base]
    for name, vals in GRID.items():
        configs = [replace(c, **{name: v}) for c in configs for v in vals]
    return configs


def ablation(sets: list[SetData], base: Config, *,
             grid: bool = False) -> dict[str, dict[str, dict[str, float]]]:
    """One factor at a time around ``base`` (Knora 0.1's fusion, thresholds 0), Knora's chosen defaults
    (``CHOSEN``), and with ``grid`` the fusion factors crossed: {label: {set name | "mean": figures}}."""
    evals = [Evaluator(ds) for ds in sets]
    out: dict[str, dict[str, dict[str, float]]] = {}
    configs = [base] + [replace(base, **{name: v}) for name, vals in FACTORS.items() for v in vals
                        if getattr(base, name) != v]
    configs.append(CHOSEN)
    if grid:
        configs += [c for c in _grid(base) if c not in configs]
    for cfg in configs:
        per = {ev.ds.name: ev.run(cfg) for ev in evals}
        per["mean"] = {k: round(statistics.fmean(p[k] for p in per.values()), 4) for k in REPORTED}
        out[cfg.label(base)] = per
    return out


# --- the reference ------------------------------------------------------------------------------------------
def _is_cjk(texts: Sequence[str]) -> bool:
    sample = "".join(texts[:50])
    return sum(1 for ch in sample if "\u4e00" <= ch <= "\u9fff") > len(sample) / 10


def reference(ds: SetData, match_count: int = 100, alpha: float = 0.5) -> dict[str, float]:
    """bm25s + numpy convex fusion; its figures and per-query latency (keyword + dense + fusion)."""
    import bm25s
    import jieba
    import Stemmer

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    cjk = _is_cjk(ds.texts)
    retriever = bm25s.BM25()  # Lucene BM25, k1 1.5, b 0.75
    if cjk:
        def toks(texts: Sequence[str]) -> list[list[str]]:
            return [[t for t in jieba.cut_for_search(x) if t.strip()] for x in texts]
        retriever.index(toks(ds.texts), show_progress=False)
        qtok: Callable[[str], object] = lambda q: toks([q])  # noqa: E731
    else:
        stemmer = Stemmer.Stemmer("english")
        retriever.index(bm25s.tokenize(ds.texts, stopwords="en", stemmer=stemmer, show_progress=False),
                        show_progress=False)
        qtok = lambda q: bm25s.tokenize([q], stopwords="en", stemmer=stemmer,  # noqa: E731
                                        show_progress=False)
    k = min(match_count, len(ds.ids))
    ranked: list[list[str]] = []
    lat: list[float] = []
    for j, q in enumerate(ds.queries):
        t0 = time.perf_counter()
        try:
            docs, scores = retriever.retrieve(qtok(q.text), k=k, show_progress=False, n_threads=1)
            kd, ks = docs[0], scores[0]
            keep = ks > 0
            kd, ks = kd[keep], ks[keep]
        except ValueError:  # no query token in the vocabulary
            kd, ks = np.array([], dtype=int), np.array([])
        sims = ds.passages @ ds.query_vecs[j]
        vd = np.argpartition(-sims, k - 1)[:k]
        vs = sims[vd]
        fused: dict[int, float] = {}
        for idx, s in zip(vd.tolist(), _normalise(vs, "minmax").tolist(), strict=True):
            fused[idx] = alpha * s
        for idx, s in zip(kd.tolist(), _normalise(ks, "minmax").tolist(), strict=True):
            fused[idx] = fused.get(idx, 0.0) + (1 - alpha) * s
        top = sorted(fused, key=lambda i: -fused[i])[:match_count]
        lat.append((time.perf_counter() - t0) * 1000)
        ranked.append([ds.ids[i] for i in top])
    return {**mean_metrics(ranked, ds), **latency(lat)}


def pct(values: list[float], p: float) -> float:
    """The p-th percentile, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def latency(ms: list[float]) -> dict[str, float]:
    """p50 / p95 of per-query milliseconds."""
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(pct(ms, 95), 2)}
