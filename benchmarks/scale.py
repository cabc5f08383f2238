"""Embedded-engine latency and memory at 10k / 100k / 1M synthetic chunks (query embedding excluded).

Synthetic corpus: chunks of ~60 words drawn from a Zipf-distributed 50k-word vocabulary, 384-d vectors from 2 000
Gaussian clusters (L2-normalised). Queries: 6 words of a random chunk plus that chunk's vector with noise.
Measured on ``SqliteEngine`` (the real engine: FTS5 + vector sets), per size:

- keyword / dense / hybrid p50 and p95 (hybrid = both engine queries concurrently + fusion, as HybridSearch does;
  hydration of the final ≤ match_count chunks by primary key is not included),
- exact numpy vs HNSW (usearch) dense latency and HNSW recall@10 against exact, and which one the engine chose,
- resident memory after loading.

    nice python benchmarks/scale.py [--sizes 10000,100000,1000000] [--queries 200] [--paths keyword]
        [--db PATH] [--no-keyword-index]

``--paths keyword`` measures keyword search only (no vector set, no HNSW build); ``--db PATH`` keeps the built
database there and reuses it on the next run (one size per run then); ``--no-keyword-index`` measures the FTS5
path instead of the in-memory BM25 postings.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.adapters.retrieval.vectors import Filter
from knora.domain.search import IndexRow
from knora.ports.retrieval import EngineQuery
from knora.services.retrieval.fusion import FusionConfig, fuse

DIM = 384
POOL = 50  # a match_count of 10 → max(10*5, 50) = 50 rows per path


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(v: list[float], p: float) -> float:
    s = sorted(v)
    return round(s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))], 3)


class Corpus:
    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.vocab = np.array([f"w{i}x" for i in range(50_000)])
        ranks = np.arange(1, 50_001)
        self.p = (1 / ranks) / (1 / ranks).sum()
        self.centroids = self.rng.normal(size=(2000, DIM)).astype(np.float32)

    def batch(self, start: int, n: int) -> tuple[list[str], np.ndarray]:
        words = self.rng.choice(self.vocab, size=(n, 60), p=self.p)
        texts = [" ".join(w) for w in words]
        c = self.rng.integers(0, 2000, size=n)
        vec = self.centroids[c] + self.rng.normal(scale=0.8, size=(n, DIM)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        return texts, vec


async def build(engine: SqliteEngine, corpus: Corpus, size: int, have: int,
                keep: dict[str, Any]) -> None:
    step = 5000
    for start in range(have, size, step):
        n = min(step, size - start)
        texts, vecs = corpus.batch(start, n)
        rows = [IndexRow(source_id=f"s{start + i}", chunk_id=f"s{start + i}", knowledge_id=f"k{(start + i) // 20}",
                         knowledge_base_id="kb", tenant_id=1, content=texts[i], embedding=vecs[i].tolist())
                for i in range(n)]
        await engine.index(rows)
        if len(keep["texts"]) < 2000:
            keep["texts"].extend(texts[:50])
            keep["vecs"].extend(vecs[:50])


CPU: dict[str, list[float]] = {}  # per-query process CPU ms by path (wall time is noisy on a shared machine)


async def timed(fn: Any, path: str = "") -> tuple[Any, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = await fn
    if path:
        CPU.setdefault(path, []).append((time.process_time() - c0) * 1000)
    return out, (time.perf_counter() - t0) * 1000


def cpu_pct(path: str) -> dict[str, float]:
    v = CPU.pop(path, [])
    return {"cpu_p50_ms": pct(v, 50), "cpu_p95_ms": pct(v, 95)} if v else {}


def sample_existing(path: Path, keep: dict[str, Any]) -> int:
    """Rows already in a kept database, and the same query sample build() keeps (50 rows of each 5000)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        n = conn.execute("SELECT count(*) FROM knora_ret_rows").fetchone()[0]
        for content, emb in conn.execute("SELECT content, embedding FROM knora_ret_rows WHERE (id - 1) % 5000 < 50"
                                         " ORDER BY id LIMIT 2000"):
            keep["texts"].append(content)
            keep["vecs"].append(np.frombuffer(emb, dtype=np.float32))
    finally:
        conn.close()
    return int(n)


async def measure(engine: SqliteEngine, keep: dict[str, Any], nq: int, rng: np.random.Generator,
                  paths: str = "all") -> dict[str, Any]:
    if paths == "keyword":
        kw_only: list[float] = []
        cpu0 = time.process_time()
        for _ in range(nq):
            j = int(rng.integers(0, len(keep["texts"])))
            text = " ".join(rng.choice(keep["texts"][j].split(), size=6, replace=False))
            kq = EngineQuery(mode="keyword", knowledge_base_ids=["kb"], text=text, top_k=POOL, threshold=0.3)
            _, t = await timed(engine.search(kq), "keyword")
            kw_only.append(t)
        return {"keyword": {"p50_ms": pct(kw_only, 50), "p95_ms": pct(kw_only, 95), **cpu_pct("keyword"),
                            "cpu_ms_per_query": round((time.process_time() - cpu0) * 1000 / nq, 2)}}
    kw_ms: list[float] = []
    vec_ms: list[float] = []
    hy_ms: list[float] = []
    for i in range(nq):
        j = int(rng.integers(0, len(keep["texts"])))
        words = keep["texts"][j].split()
        text = " ".join(rng.choice(words, size=6, replace=False))
        q = keep["vecs"][j] + rng.normal(scale=0.02, size=DIM).astype(np.float32)
        q = (q / np.linalg.norm(q)).tolist()
        kq = EngineQuery(mode="keyword", knowledge_base_ids=["kb"], text=text, top_k=POOL, threshold=0.3)
        vq = EngineQuery(mode="vector", knowledge_base_ids=["kb"], embedding=q, top_k=POOL, threshold=0.2)
        _, t = await timed(engine.search(kq), "keyword")
        kw_ms.append(t)
        _, t = await timed(engine.search(vq), "dense")
        vec_ms.append(t)
        t0, c0 = time.perf_counter(), time.process_time()
        v, k = await asyncio.gather(engine.search(vq), engine.search(kq))
        if v and k:
            fuse(None, [(h.chunk_id, h.score) for h in v], [(h.chunk_id, h.score) for h in k], FusionConfig())
        hy_ms.append((time.perf_counter() - t0) * 1000)
        CPU.setdefault("hybrid", []).append((time.process_time() - c0) * 1000)
    return {"keyword": {"p50_ms": pct(kw_ms, 50), "p95_ms": pct(kw_ms, 95), **cpu_pct("keyword")},
            "dense": {"p50_ms": pct(vec_ms, 50), "p95_ms": pct(vec_ms, 95), **cpu_pct("dense")},
            "hybrid": {"p50_ms": pct(hy_ms, 50), "p95_ms": pct(hy_ms, 95), **cpu_pct("hybrid")}}


def exact_vs_ann(engine: SqliteEngine, keep: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    vs = next(iter(engine._sets.values()))
    qs = []
    for _ in range(100):
        j = int(rng.integers(0, len(keep["vecs"])))
        q = keep["vecs"][j] + rng.normal(scale=0.02, size=DIM).astype(np.float32)
        qs.append((q / np.linalg.norm(q)).astype(np.float32))
    flt = Filter()
    ann = vs._ann
    vs._ann = None
    vs.ann_min_rows = 1 << 60  # force exact
    exact_t, truth = [], []
    for q in qs:
        t0 = time.perf_counter()
        truth.append({r for r, _ in vs.search(q, 10, -1.0, flt)})
        exact_t.append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {"exact_p50_ms": pct(exact_t, 50), "exact_p95_ms": pct(exact_t, 95)}
    t0 = time.perf_counter()
    if ann is None:
        vs.build_ann_now()
    else:
        vs._ann = ann
    out["hnsw_build_s"] = round(time.perf_counter() - t0, 1)
    ann_t, hit = [], 0
    for q, t in zip(qs, truth, strict=True):
        t0 = time.perf_counter()
        got = {r for r, _ in vs.search(q, 10, -1.0, flt)}
        ann_t.append((time.perf_counter() - t0) * 1000)
        hit += len(got & t)
    out.update({"hnsw_p50_ms": pct(ann_t, 50), "hnsw_p95_ms": pct(ann_t, 95), "hnsw_recall@10": hit / 1000,
                "hnsw_ef": vs.ann_expansion, "hnsw_self_check_recall": vs.ann_recall})
    vs._ann = None
    vs.ann_min_rows = engine._ann_min_rows
    return out


def vectors_only(size: int, nq: int) -> dict[str, Any]:
    """Dense search alone on a VectorSet of ``size`` rows (no SQLite): exact numpy vs HNSW, and memory."""
    from knora.adapters.retrieval.vectors import RowMeta, VectorSet

    corpus = Corpus()
    rng = np.random.default_rng(3)
    base = rss_mb()
    vs = VectorSet(DIM, ann_min_rows=1 << 60)
    meta = RowMeta(knowledge_id="k", tag_id=None, is_enabled=True, is_recommended=True, knowledge_type="document")
    keep: list[np.ndarray] = []
    step = 50_000
    for start in range(0, size, step):
        n = min(step, size - start)
        c = corpus.rng.integers(0, 2000, size=n)
        vec = corpus.centroids[c] + corpus.rng.normal(scale=0.8, size=(n, DIM)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        vs.upsert(list(range(start, start + n)), vec, [meta] * n)
        keep.extend(vec[:20])
    out: dict[str, Any] = {"rows": size, "matrix_rss_mb": round(rss_mb() - base)}
    engine = type("E", (), {"_sets": {("kb", DIM): vs}, "_ann_min_rows": 1 << 60})()
    out.update(exact_vs_ann(engine, {"vecs": keep}, rng))  # type: ignore[arg-type]
    out["rss_with_hnsw_mb"] = round(rss_mb() - base)
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ann-min-rows", type=int, default=200_000)
    ap.add_argument("--vectors-only", type=int, default=0, help="only dense search on N rows, no SQLite")
    ap.add_argument("--paths", choices=["all", "keyword"], default="all")
    ap.add_argument("--db", default="", help="keep the database at this path and reuse it")
    ap.add_argument("--no-keyword-index", action="store_true", help="keyword search on FTS5 only")
    args = ap.parse_args()
    if args.vectors_only:
        print(json.dumps({"benchmark": "scale-vectors", **vectors_only(args.vectors_only, args.queries)}))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    out: dict[str, Any] = {"benchmark": "scale", "dim": DIM, "pool": POOL, "ann_min_rows": args.ann_min_rows,
                           "paths": args.paths, "keyword_index": not args.no_keyword_index}
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "knora.db"
        existed = db.exists()
        engine = SqliteEngine(db, ann_min_rows=args.ann_min_rows, keyword_index=not args.no_keyword_index)
        await engine.start()
        corpus = Corpus()
        keep: dict[str, Any] = {"texts": [], "vecs": []}
        have = sample_existing(db, keep) if existed else 0
        for size in sizes:
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            await build(engine, corpus, size, have, keep)
            built = size - have
            have = max(have, size)
            build_s = time.perf_counter() - t0
            build_cpu = time.process_time() - cpu0
            gc.collect()
            base = rss_mb()
            kw: dict[str, Any] = {}
            if not args.no_keyword_index:  # load the keyword index (the engine would do this in the background)
                t0 = time.perf_counter()
                await engine.warm_keyword()
                gc.collect()
                kw = {"kw_load_s": round(time.perf_counter() - t0, 1), "kw_rss_mb": round(rss_mb() - base),
                      "kw_index": engine.keyword_index_info()}
            if args.paths == "keyword":
                res = await measure(engine, keep, args.queries, rng, "keyword")
                res.update({"index_s": round(build_s, 1), "rows_indexed": built,
                            "index_cpu_ms_per_row": round(build_cpu * 1000 / built, 3) if built else None,
                            "rss_mb": round(rss_mb()), "db_mb": round(db.stat().st_size / 2**20), **kw})
                out[str(size)] = res
                print(json.dumps({str(size): res}), file=sys.stderr)
                continue
            base = rss_mb()
            # first dense query loads the vector set (and, above ann_min_rows, builds HNSW synchronously here)
            t0 = time.perf_counter()
            await engine.search(EngineQuery(mode="vector", knowledge_base_ids=["kb"], embedding=keep["vecs"][0].tolist(),
                                            top_k=10))
            vs = next(iter(engine._sets.values()))
            if len(vs) >= args.ann_min_rows and vs._ann is None:
                while vs._ann_building:
                    await asyncio.sleep(0.5)
            load_s = time.perf_counter() - t0
            res = await measure(engine, keep, args.queries, rng)
            res.update({"index_s": round(build_s, 1), "rows_indexed": built,
                        "index_cpu_ms_per_row": round(build_cpu * 1000 / built, 3) if built else None, **kw,
                        "load_s": round(load_s, 1), "rss_mb": round(rss_mb()),
                        "rss_before_load_mb": round(base), "vector_index": "hnsw" if vs._ann is not None else "exact",
                        "db_mb": round(db.stat().st_size / 2**20)})
            if size >= 100_000:
                res["exact_vs_hnsw"] = exact_vs_ann(engine, keep, rng)
                if len(vs) >= args.ann_min_rows and vs._ann is None:
                    vs.build_ann_now()
            out[str(size)] = res
            print(json.dumps({str(size): res}), file=sys.stderr)
        await engine.close()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
