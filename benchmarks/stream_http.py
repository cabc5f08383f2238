"""Concurrent streaming chats through real HTTP sockets; prints one JSON line.

A server process runs Knora's HTTP app as ``knora serve`` does (uvicorn, the CLI's uvloop runner,
``gc.freeze``) with the open-loop token-rate fake of ``benchmarks/stream.py`` as its answering runtime. This
process opens N TCP connections at once (or over ``--ramp`` seconds), posts one ``/api/v1/knowledge-chat/:id``
on each and reads the SSE response to its end. Per chat: time to the first answer frame, the model tokens
received per second after it, and keep-up = model time / (request → end of response). Afterwards every
response is parsed (frame order, the whole answer text with its citations) and every saved message fetched
through the API and compared with what was streamed. The server's own CPU time (``/proc``) is reported apart
from this client's.

    python benchmarks/stream_http.py [--chats 1000] [--tokens 300] [--token-interval 0.02] [--ramp 0]
                                     [--stream-log memory|redis] [--frame-budget N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from stream import KEEP_UP, TokenRateModel, pct, well_formed  # benchmarks/stream.py, on the path set above

API_KEY = "sk-bench-http"
TOK = re.compile(rb"tok")


def serve(args: argparse.Namespace) -> None:
    """The server process (``--serve``)."""
    import gc

    import uvicorn

    from knora.api.app import create_app
    from knora.cli.main import run
    from knora.root import Overrides, build_services
    from knora.settings import Settings
    from tests.fakes.retrieval import RecordingRetrieval

    async def main() -> None:
        extra = {} if args.frame_budget is None else {"stream_frame_budget": args.frame_budget}
        # streams are what is measured: an engine that only records (no pgvector needed on PostgreSQL)
        no_retrieval = Overrides(engine=lambda _s: RecordingRetrieval())
        c: Any = await build_services(Settings(
            data_dir=Path(args.data_dir), api_key=API_KEY, embedder="local:hash", sample_kb=False,
            stream_log=args.stream_log, redis_url=args.redis_url, redis_prefix=args.redis_prefix,
            log_level="WARNING", rate_limit_per_minute=0, rate_limit_heavy_per_minute=0,  # one caller
            **extra), no_retrieval)
        c.runners.quick = TokenRateModel(args.tokens, args.token_interval)
        gc.collect()
        gc.freeze()
        config = uvicorn.Config(create_app(services=c), host="127.0.0.1", port=args.port, log_level="warning",
                                lifespan="on", backlog=4096)
        try:
            await uvicorn.Server(config).serve()
        finally:
            await c.aclose()

    run(main())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def dechunk(raw: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response (after the headers)."""
    out, i = bytearray(), 0
    while True:
        j = raw.index(b"\r\n", i)
        size = int(raw[i:j].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += raw[j + 2:j + 2 + size]
        i = j + 2 + size + 2


async def chat(port: int, sid: str, delay: float, query: str) -> dict[str, Any]:
    if delay:
        await asyncio.sleep(delay)
    body = json.dumps({"query": query}).encode()
    t_req = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST /api/v1/knowledge-chat/{sid} HTTP/1.1\r\nHost: bench\r\nX-API-Key: {API_KEY}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                 .encode() + body)
    await writer.drain()
    buf = bytearray()
    marks: list[tuple[float, int]] = []  # (arrival time, buffer length after the read)
    while True:
        data = await reader.read(65536)
        if not data:
            break
        buf += data
        marks.append((time.perf_counter(), len(buf)))
    t_end = time.perf_counter()
    writer.close()
    return {"sid": sid, "raw": bytes(buf), "marks": marks, "t_req": t_req, "t_end": t_end}


def analyse(result: dict[str, Any], tokens: int) -> dict[str, Any]:
    raw: bytes = result["raw"]
    head, _, rest = raw.partition(b"\r\n\r\n")
    ok = head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    frames = []
    if ok:
        body = dechunk(rest) if b"chunked" in head.lower() else rest
        for block in body.split(b"\n\n"):
            if block.startswith(b"event:message\ndata:"):
                frames.append(json.loads(block.split(b"data:", 1)[1]))
    answer = "".join(f["content"] for f in frames if f["response_type"] == "answer")
    # when each model token reached the client: the read whose data holds the end of the token's text
    ends = [m.end() for m in TOK.finditer(raw)]
    times, k = [], 0
    for at, size in result["marks"]:
        while k < len(ends) and ends[k] <= size:
            times.append(at)
            k += 1
    first = times[0] if times else None
    rate = (len(times) - 1) / (times[-1] - first) if len(times) > 1 and times[-1] > first else None
    return {"well_formed": ok and well_formed(frames, tokens), "answer": answer, "first": first, "rate": rate,
            "frames": sum(f["response_type"] == "answer" for f in frames),
            "message_id": frames[0].get("assistant_message_id") if frames else ""}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    port = args.port
    with tempfile.TemporaryDirectory() as tmp:
        prefix = f"knora-bench-{uuid.uuid4().hex[:8]}"
        cmd = [sys.executable, __file__, "--serve", "--port", str(port), "--data-dir", tmp, "--tokens",
               str(args.tokens), "--token-interval", str(args.token_interval), "--stream-log",
               args.stream_log,
               "--redis-url", args.redis_url, "--redis-prefix", prefix]
        if args.frame_budget is not None:
            cmd += ["--frame-budget", str(args.frame_budget)]
        server = subprocess.Popen(cmd)  # noqa: ASYNC220 - started once, before the clock runs
        try:
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, headers={"X-API-Key": API_KEY}, timeout=60) as http:
                for _ in range(600):
                    try:
                        if (await http.get("/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.1)
                sem = asyncio.Semaphore(32)

                async def new_session() -> str:
                    async with sem:
                        r = await http.post("/api/v1/sessions", json={"title": "bench"})
                        return str(r.json()["data"]["id"])

                sids = await asyncio.gather(*(new_session() for _ in range(args.chats)))
                await asyncio.sleep(0.5)
                cpu0, t0 = cpu_seconds(server.pid), time.perf_counter()
                results = await asyncio.gather(*(chat(port, sid, args.ramp * i / args.chats, "q")
                                                 for i, sid in enumerate(sids)))
                wall, server_cpu = time.perf_counter() - t0, cpu_seconds(server.pid) - cpu0
                rows = [analyse(r, args.tokens) for r in results]
                saved = 0
                for row, r in zip(rows, results, strict=True):
                    async with sem:
                        page = (await http.get(f"/api/v1/messages/{r['sid']}/load")).json()["data"]
                    bot = [m for m in page if m["role"] == "assistant"]
                    saved += bool(bot and bot[-1]["is_completed"] and bot[-1]["content"] == row["answer"]
                                  and bot[-1]["knowledge_references"])
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
        if args.stream_log == "redis":
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(args.redis_url)
            keys = [k async for k in client.scan_iter(f"{prefix}*")]
            for i in range(0, len(keys), 500):
                await client.delete(*keys[i:i + 500])
            await client.aclose()
    ideal = args.tokens * args.token_interval
    keep = [ideal / (r["t_end"] - r["t_req"]) for r in results]
    first = [(row["first"] - r["t_req"] - args.token_interval) * 1000 for row, r in zip(rows, results,
                                                                                        strict=True)
             if row["first"] is not None]
    rates = [row["rate"] for row in rows if row["rate"] is not None]
    frames = [row["frames"] for row in rows]
    return {"benchmark": "stream_http", "chats": args.chats, "tokens_per_chat": args.tokens,
            "token_interval_s": args.token_interval, "model_time_s": ideal, "ramp_s": args.ramp,
            "stream_log": args.stream_log, "frame_budget": args.frame_budget, "wall_s": round(wall, 3),
            "server_cpu_s": round(server_cpu, 3),
            "server_cpu_per_model_s": round(server_cpu / (ideal + args.ramp), 3),
            "first_token_overhead_ms_p50": round(statistics.median(first), 1) if first else None,
            "first_token_overhead_ms_p99": round(pct(first, .99), 1) if first else None,
            "fake_tokens_per_s": 1 / args.token_interval,
            "chat_tokens_per_s_p10": round(pct(rates, .10), 1) if rates else None,
            "chat_tokens_per_s_p50": round(statistics.median(rates), 1) if rates else None,
            "answer_frames_per_chat_p50": statistics.median(frames),
            "keep_up_ratio_p50": round(statistics.median(keep), 3), "keep_up_ratio_p10": round(pct(keep, .10),
                                                                                               3),
            "keeps_up": pct(keep, .10) >= KEEP_UP,
            "malformed_streams": sum(not row["well_formed"] for row in rows), "saved_complete": saved}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--token-interval", type=float, default=0.02)
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds over which the chats arrive, evenly")
    parser.add_argument("--stream-log", choices=("memory", "redis"), default="memory")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--frame-budget", type=int, default=None)
    parser.add_argument("--port", type=int, default=18731)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--redis-prefix", default="knora-bench", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        serve(ns)
    else:
        try:
            import uvloop

            out = uvloop.run(main(ns))
        except ImportError:
            out = asyncio.run(main(ns))
        print(json.dumps(out))
