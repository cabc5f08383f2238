"""The OpenAI-compatible API's cost per turn beside the WeKnora-compatible one; prints one JSON line.

The same question over the same knowledge base (the real quick-answer pipeline, the extractive answerer, the
``local:hash`` embedder), streamed, through the app in-process (httpx's ASGI transport: the server's work, no
socket), in interleaved rounds so that the three paths share the machine's state:

- ``v1_unsaved``: ``POST /v1/chat/completions`` with ``stream: true`` — an unsaved turn (nothing stored);
- ``v1_session``: the same with ``X-Knora-Session-Id`` — a stored turn of one session;
- ``api_v1``: ``POST /api/v1/knowledge-chat/{session}`` — Knora's own stored turn, WeKnora's SSE frames.

Reported: per-turn milliseconds (p50, p90) for each, and the ratios of p50 to ``api_v1``'s.

    python benchmarks/openai_api.py [--turns 40]
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

QUESTION = "How is oolong tea processed?"
DOCS = {
    "Solar power": "Solar panels convert sunlight into electricity using photovoltaic cells. "
                   "A typical residential panel produces about 400 watts at peak.",
    "Tea culture": "Green tea is steamed or pan-fired shortly after picking to stop oxidation. "
                   "Oolong tea is partially oxidised. Black tea is fully oxidised before drying.",
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(turns: int) -> dict[str, Any]:
    import httpx

    from knora.api.app import create_app
    from knora.root import build_services
    from knora.settings import Settings

    key = "sk-bench"
    with tempfile.TemporaryDirectory() as tmp:
        c = await build_services(Settings(data_dir=Path(tmp), api_key=key, embedder="local:hash",
                                          sample_kb=False, parse_isolation="thread", rate_limit_per_minute=0,
                                          rate_limit_heavy_per_minute=0))
        try:
            if not c.jobs.started:
                await c.jobs.start()
            kb = await c.kb_service.create(c.default_tenant_id, {"name": "bench"})
            for title, text in DOCS.items():
                await c.ingest_service.add_manual(c.default_tenant_id, kb.id, title, text)
            await c.jobs.wait_idle(timeout=120)
            transport = httpx.ASGITransport(app=create_app(services=c))
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120,
                                         headers={"Authorization": f"Bearer {key}"}) as http:
                sid = (await http.post("/api/v1/sessions", json={"title": "bench"})).json()["data"]["id"]
                v1_sid = (await http.post("/api/v1/sessions", json={"title": "bench"})).json()["data"]["id"]
                body = {"model": f"knora:kb/{kb.id}", "stream": True,
                        "messages": [{"role": "user", "content": QUESTION}]}

                async def v1_unsaved() -> bytes:
                    return (await http.post("/v1/chat/completions", json=body)).content

                async def v1_session() -> bytes:
                    return (await http.post("/v1/chat/completions", json=body,
                                            headers={"X-Knora-Session-Id": v1_sid})).content

                async def api_v1() -> bytes:
                    return (await http.post(f"/api/v1/knowledge-chat/{sid}",
                                            json={"query": QUESTION, "knowledge_base_ids": [kb.id]})).content

                paths = {"v1_unsaved": v1_unsaved, "v1_session": v1_session, "api_v1": api_v1}
                times: dict[str, list[float]] = {name: [] for name in paths}
                for name, call in paths.items():  # warm-up, and a check that each path answers
                    out = await call()
                    assert b"partially oxidised" in out, (name, out[:300])
                for _ in range(turns):
                    for name, call in paths.items():
                        started = time.perf_counter()
                        await call()
                        times[name].append((time.perf_counter() - started) * 1000)
                        await c.chat_service.wait_idle()  # a stored turn's save is not the next turn's cost
        finally:
            await c.aclose()
    base = statistics.median(times["api_v1"])
    out: dict[str, Any] = {"benchmark": "openai_api", "turns": turns}
    for name, values in times.items():
        out[f"{name}_p50_ms"] = round(statistics.median(values), 2)
        out[f"{name}_p90_ms"] = round(pct(values, 0.9), 2)
    out["v1_unsaved_vs_api_v1"] = round(statistics.median(times["v1_unsaved"]) / base, 3)
    out["v1_session_vs_api_v1"] = round(statistics.median(times["v1_session"]) / base, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.turns))))


if __name__ == "__main__":
    main()
