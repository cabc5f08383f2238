"""What a tool call over ``/mcp`` costs next to the same work through the REST API; prints one JSON line.

One process: services on a scratch data dir (``local:hash`` embedder, ``--docs`` small documents), the app on
uvicorn (127.0.0.1, free port), and two clients over real sockets: httpx for the REST routes, the SDK's
``Client`` (Streamable HTTP, one connection) for the tools. Rounds alternate between the two so drift hits
both alike. Reported per pair: p50 milliseconds of each and ``ratio`` = MCP p50 / REST p50.

- ``search``: ``search_knowledge`` vs ``POST /knowledge-bases/:id/hybrid-search`` (same query, top 8);
- ``list``: ``list_knowledge_bases`` vs ``GET /knowledge-bases`` (almost no work: the protocol's own cost).

    python benchmarks/mcp_server.py [--docs 200] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.api.app import create_app  # noqa: E402
from knora.domain.knowledge import ParseStatus  # noqa: E402
from knora.root import build_services  # noqa: E402
from knora.settings import Settings  # noqa: E402

KEY = "sk-bench-mcp"
WORDS = ["tea", "oolong", "solar", "panel", "watts", "river", "bridge", "invoice", "holiday", "policy",
         "cluster", "replica", "stream", "token", "citation", "parser", "chunk", "vector", "keyword",
         "fusion", "rerank", "answer", "session", "tenant", "budget"]


def doc(i: int) -> str:
    body = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(120))
    return f"# Note {i}\n\nNote {i} is about {WORDS[i % len(WORDS)]}. {body}."


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    t = time.perf_counter()
    await fn()
    return (time.perf_counter() - t) * 1000


async def main(args: argparse.Namespace) -> dict[str, object]:
    data = Path(tempfile.mkdtemp(prefix="knora-bench-mcp-"))
    settings = Settings(data_dir=data, api_key=KEY, embedder="local:hash", sample_kb=False,
                        rate_limit_per_minute=0, rate_limit_heavy_per_minute=0, parse_isolation="thread",
                        log_level="WARNING")
    c = await build_services(settings)
    try:
        kb = await c.kb_service.create(c.default_tenant_id, {"name": "bench"})
        ids = [(await c.ingest_service.add_manual(c.default_tenant_id, kb.id, f"Note {i}", doc(i))).id
               for i in range(args.docs)]
        while True:
            done = [await c.ingest_service.get(c.default_tenant_id, k) for k in ids]
            if all(k.parse_status in (ParseStatus.COMPLETED, ParseStatus.FAILED) for k in done):
                break
            await asyncio.sleep(0.2)
        server = uvicorn.Server(uvicorn.Config(create_app(services=c), host="127.0.0.1", port=0,
                                               log_level="warning", lifespan="on"))
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        query = {"query_text": "oolong tea holiday policy", "match_count": 8}
        names = ("search_rest", "search_mcp", "list_rest", "list_mcp")
        times: dict[str, list[float]] = {k: [] for k in names}
        try:
            async with (httpx.AsyncClient(base_url=base, headers={"X-API-Key": KEY}, timeout=60) as rest,
                        httpx2.AsyncClient(headers={"X-API-Key": KEY}, timeout=60) as raw,
                        Client(streamable_http_client(f"{base}/mcp", http_client=raw), cache=None) as mcp):
                async def search_rest() -> None:
                    r = await rest.post(f"/api/v1/knowledge-bases/{kb.id}/hybrid-search", json=query)
                    r.raise_for_status()

                async def search_mcp() -> None:
                    r = await mcp.call_tool("search_knowledge", {"query": query["query_text"], "top_k": 8,
                                                                 "knowledge_bases": [kb.id]})
                    assert not r.is_error, r.content

                async def list_rest() -> None:
                    (await rest.get("/api/v1/knowledge-bases")).raise_for_status()

                async def list_mcp() -> None:
                    assert not (await mcp.call_tool("list_knowledge_bases", {})).is_error

                calls = {"search_rest": search_rest, "search_mcp": search_mcp, "list_rest": list_rest,
                         "list_mcp": list_mcp}
                for fn in calls.values():  # warm-up
                    for _ in range(5):
                        await fn()
                for _ in range(args.rounds):
                    for name, fn in calls.items():
                        times[name].append(await timed(fn))
        finally:
            server.should_exit = True
            await task
    finally:
        await c.aclose()
    p50 = {k: round(statistics.median(v), 3) for k, v in times.items()}
    return {"benchmark": "mcp", "docs": args.docs, "rounds": args.rounds, "p50_ms": p50,
            "search_ratio": round(p50["search_mcp"] / p50["search_rest"], 2),
            "list_ratio": round(p50["list_mcp"] / p50["list_rest"], 2)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=200)
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
