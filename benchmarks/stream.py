"""Streaming benchmarks; prints one JSON line.

1. ``latency``: append → follower delivery through the StreamLog port, one event at a time (no queueing), for the
   memory log and the Redis log (goals: p50 ≤ 2 ms memory, ≤ 5 ms Redis). The follower is a separate task
   reading with ``follow()`` exactly as the SSE route does; for Redis every hop goes through the server.
2. ``concurrency``: N chat turns started at once in one process, each streamed by a token-rate fake model
   (``--tokens`` deltas, ``--token-interval`` seconds apart) and consumed through the SSE frame generator the
   HTTP route uses. Every consumer checks that it received every frame exactly once, in order, ending with
   ``complete``, and that the saved message holds the whole answer. ``slowdown`` = wall time / the time the model
   alone needs; ~1.0 means the process keeps up with the model.

    python benchmarks/stream.py [--events 2000] [--chats 1000] [--tokens 50] [--token-interval 0.02] [--no-redis]
                                [--database-url postgresql+asyncpg://…]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.domain.stream import BusEvent, StreamEvent
from knora.services.streaming.turn import TurnContext, TurnOutcome, TurnRequest


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(log: Any, events: int) -> dict[str, float]:
    sid, mid = "bench", str(uuid.uuid4())
    received: asyncio.Queue[float] = asyncio.Queue()

    async def follower() -> None:
        async for ev in log.follow(sid, mid):
            received.put_nowait(time.perf_counter() - ev.data["t"])

    task = asyncio.create_task(follower())
    await log.append(sid, mid, StreamEvent(type="answer", data={"t": time.perf_counter()}))
    await received.get()  # warm-up: the follower is attached
    samples = []
    for _ in range(events):
        await log.append(sid, mid, StreamEvent(type="answer", content="tok", data={"t": time.perf_counter()}))
        samples.append(await received.get() * 1000)
    await log.append(sid, mid, StreamEvent(type="complete", done=True, data={"t": time.perf_counter()}))
    await task
    return {"p50_ms": round(statistics.median(samples), 3), "p99_ms": round(pct(samples, 0.99), 3),
            "max_ms": round(max(samples), 3), "events": events}


class TokenRateModel:
    """A fake model as a TurnRunner: ``tokens`` answer deltas at a fixed rate, with citations."""

    def __init__(self, tokens: int, interval: float) -> None:
        self.tokens, self.interval = tokens, interval

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        from knora.domain.search import SearchResult

        refs = [SearchResult(id=str(uuid.uuid4()), content="x", knowledge_id="d", knowledge_title="Doc")]
        ctx.references.register_search_results(refs)
        await ctx.bus.emit(BusEvent.REFERENCES, {"references": [r.model_dump() for r in refs]})
        parts = []
        for i in range(self.tokens):
            await asyncio.sleep(self.interval)
            delta = 'tok<ref id="c1"/> ' if i % 10 == 9 else "tok "
            parts.append(delta)
            await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": delta, "done": False, "event_id": "a"})
        await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": "a"})
        return TurnOutcome(answer="".join(parts), references=refs, model_id="fake:token-rate")


async def concurrency(chats: int, tokens: int, interval: float, database_url: str | None = None) -> dict[str, Any]:
    from knora.container import Container
    from knora.services.streaming.intake import ChatBody
    from knora.services.streaming.sse import stream_frames
    from knora.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        c: Any = Container(Settings(data_dir=Path(tmp), api_key="sk-bench", embedder="local:hash", sample_kb=False,
                                    database_url=database_url))
        await c.start(wiring=("knora.services.streaming.wiring",))
        c.quick_answer = TokenRateModel(tokens, interval)
        tenant = c.default_tenant_id
        sessions = [await c.session_service.create(tenant, title="bench") for _ in range(chats)]
        lost = dup = incomplete = 0
        start_ms: list[float] = []
        stream_s: list[float] = []

        async def one(sid: str) -> tuple[str, str]:
            nonlocal lost, dup, incomplete
            t_start = time.perf_counter()
            turn = await c.chat_service.start(tenant, sid, ChatBody(query="q"), str(uuid.uuid4()))
            t_started = time.perf_counter()
            start_ms.append((t_started - t_start) * 1000)
            expected = 0
            last = ""
            async for raw in stream_frames(c.stream_log, sid, turn.assistant_message_id, turn.request_id,
                                           live=True):
                if raw.startswith(b":"):
                    continue
                frame = json.loads(raw.split(b"data:", 1)[1])
                expected += 1
                last = frame["response_type"]
            stream_s.append(time.perf_counter() - t_started)
            events = await c.stream_log.read(sid, turn.assistant_message_id)
            lost += max(0, len(events) - expected)
            dup += max(0, expected - len(events))
            incomplete += last != "complete"
            return sid, turn.assistant_message_id

        t0 = time.perf_counter()
        done = await asyncio.gather(*(one(s.id) for s in sessions))
        await c.chat_service.wait_idle()
        wall = time.perf_counter() - t0
        saved_ok = 0
        for sid, mid in done:
            m = await c.session_service.get_message(tenant, mid)
            saved_ok += bool(m and m.is_completed and m.content.count("<kb ") == tokens // 10)
        await c.close()
    ideal = tokens * interval
    return {"database": "postgresql" if database_url else "sqlite", "chats": chats, "tokens_per_chat": tokens, "token_interval_s": interval, "model_time_s": ideal,
            "wall_s": round(wall, 3), "slowdown": round(wall / ideal, 3),
            "turn_start_ms_p50": round(statistics.median(start_ms), 1), "turn_start_ms_p99": round(pct(start_ms, .99), 1),
            "stream_s_p50": round(statistics.median(stream_s), 3), "stream_s_max": round(max(stream_s), 3), "lost_events": lost,
            "duplicated_events": dup, "incomplete_streams": incomplete, "saved_complete": saved_ok,
            "delivered_tokens_per_s": round(chats * tokens / wall, 1)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from knora.adapters.stream.memory import MemoryStreamLog

    out: dict[str, Any] = {"benchmark": "stream"}
    mem = MemoryStreamLog()
    out["latency_memory"] = await latency(mem, args.events)
    await mem.close()
    if not args.no_redis:
        from knora.adapters.stream.redis import RedisStreamLog

        prefix = f"knora-bench-{uuid.uuid4().hex[:8]}"
        red = RedisStreamLog(args.redis_url, prefix=prefix, ttl_seconds=60)
        try:
            out["latency_redis"] = await latency(red, args.events)
        finally:
            await red._client.delete(*[k async for k in red._client.scan_iter(f"{prefix}*")] or ["-"])
            await red.close()
    if args.chats:
        out["concurrency"] = await concurrency(args.chats, args.tokens, args.token_interval, args.database_url)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--token-interval", type=float, default=0.02)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument("--database-url", default=None, help="e.g. postgresql+asyncpg://postgres@127.0.0.1/x "
                        "(an empty database; default: a temporary SQLite file)")
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
