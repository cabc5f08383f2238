"""How long other requests wait while the server reads a 20 MB JSON body. Prints one JSON line per body shape.

A probe asks ``GET /health`` every 10 ms while one ``POST /api/v1/auth/login`` carries a ~20 MB body
(refused after parsing: a wrong password; the route reads one field, so the figures are the body's reading
alone): the longest time between two answered probes (a probe cannot even start while the loop is held) and
the probes' own latency, during the POST. ``--inline`` parses every body on the event loop (as before issue
20's fix), for comparison.

    python benchmarks/body_stall.py [--inline] [--route login|models]

``--route models`` sends the body to ``POST /api/v1/models``, whose service is handed the whole body.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from knora.api import body
from knora.api.app import create_app
from knora.root import build_services
from knora.settings import Settings

JSON_TYPE = {"Content-Type": "application/json"}
SHAPES = {
    "one_string": lambda: {"password": "wrong", "query": "word " * (4 * 1024 * 1024)},
    "many_objects": lambda: {"password": "wrong", "items": [{"id": i, "name": f"n{i}", "tags": ["a", "b"]}
                                                          for i in range(400_000)]},
}


# route → the status its refusal answers: login reads one field; models hands the whole body to its service
ROUTES = {"login": ("/api/v1/auth/login", 401), "models": ("/api/v1/models", 400)}


async def run(shape: str, route: str = "login") -> dict[str, Any]:
    raw = json.dumps(SHAPES[shape]()).encode()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), api_key="bench", embedder="local:hash", sample_kb=False,
                            max_chat_body_bytes=64 * 1024 * 1024)
        services = await build_services(settings)
        try:
            transport = httpx.ASGITransport(app=create_app(services=services))
            async with httpx.AsyncClient(transport=transport, base_url="http://knora.bench",
                                         headers={"X-API-Key": "bench"}, timeout=120) as http:
                await http.get("/health")
                latencies: list[float] = []
                answered: list[float] = []
                done = asyncio.Event()

                async def probe() -> None:
                    while not done.is_set():
                        t0 = time.perf_counter()
                        await http.get("/health")
                        answered.append(time.perf_counter())
                        latencies.append((answered[-1] - t0) * 1000)
                        await asyncio.sleep(0.01)

                prober = asyncio.create_task(probe())
                await asyncio.sleep(0.1)
                t0 = time.perf_counter()
                path, refused = ROUTES[route]
                r = await http.post(path, content=raw, headers=JSON_TYPE)
                t1 = time.perf_counter()
                post_ms = (t1 - t0) * 1000
                done.set()
                await prober
                assert r.status_code == refused, r.text
        finally:
            await services.aclose()
    during = [t0, *(t for t in answered if t0 < t < t1), t1]  # the POST's start, answered probes, its end
    gaps = [(b - a) * 1000 for a, b in zip(during, during[1:], strict=False)]
    latencies.sort()
    return {"benchmark": "body_stall", "shape": shape, "route": route, "body_mb": round(len(raw) / 1e6, 1),
            "parsed": "inline" if len(raw) < body.OFFLOAD_BYTES else "worker thread",
            "post_ms": round(post_ms), "probes_during_post": len(during) - 2,
            "probe_gap_ms_max": round(max(gaps), 1), "probe_ms_max": round(latencies[-1], 1),
            "probe_ms_p99": round(latencies[int(0.99 * (len(latencies) - 1))], 1),
            "probe_ms_median": round(statistics.median(latencies), 1)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inline", action="store_true", help="parse on the event loop (the behaviour before)")
    ap.add_argument("--shape", choices=sorted(SHAPES), action="append")
    ap.add_argument("--route", choices=sorted(ROUTES), default="login")
    a = ap.parse_args()
    if a.inline:
        body.OFFLOAD_BYTES = 1 << 40
    for name in a.shape or list(SHAPES):
        print(json.dumps(asyncio.run(run(name, a.route))))
