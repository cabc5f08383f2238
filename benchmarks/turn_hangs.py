"""Turns that never finish (issue 16, item 1); prints one JSON line.

``--chats`` chats run at once in one process, each asking its questions one after the other until
``--turns`` turns in all have run, against the Redis stream log and the fake OpenAI-compatible model server
(a real HTTP server streaming ``--chunks`` deltas ``--chunk-delay`` seconds apart). A turn is *hung* when
its log has no ``complete``/``stop`` within ``--deadline`` seconds of its start, or when its assistant
message is not ``is_completed`` once the log ended. Before the fix, ~1.7 % of turns at 300 chats hung with
the whole answer and its done mark logged: the turn waited for a stop watcher that had lost its cancellation.

Reported: turns, concurrency, hung, ended_by_stop, incomplete_messages, p50/p95 turn time (start → terminal
entry seen by a follower), wall seconds.

    nice python benchmarks/turn_hangs.py [--turns 5000] [--chats 300] [--chunks 30] [--chunk-delay 0.01]
                                         [--deadline 60] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.root import build_services
from knora.services.streaming.intake import ChatBody
from knora.settings import Settings
from tests.fakes.model_server import FakeModelServer, Reply


@dataclass
class Tally:
    times: list[float] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    stopped: int = 0
    incomplete: int = 0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def chat(services: Any, todo: itertools.count[int], turns: int, deadline: float, tally: Tally) -> None:
    tenant, chats, log = services.default_tenant_id, services.chat_service, services.stream_log
    session = await services.session_service.create(tenant, title="hangs")
    while next(todo) < turns:
        began = time.monotonic()
        turn = await chats.start(tenant, session.id, ChatBody(query=f"question {uuid.uuid4().hex[:6]}"),
                                 str(uuid.uuid4()), mode="knowledge")
        mid = turn.assistant_message_id
        end: str | None = None
        try:
            async with asyncio.timeout(deadline):
                async for event in log.follow(session.id, mid):
                    if event is not None and event.type in ("complete", "stop"):
                        end = event.type
                        break
        except TimeoutError:
            pass
        if end is None:
            tally.hung.append(mid)
            continue
        tally.times.append(time.monotonic() - began)
        tally.stopped += end == "stop"
        async with asyncio.timeout(deadline):  # the save happens before the terminal entry: never long
            while not ((m := await services.session_service.get_message(tenant, mid)) and m.is_completed):
                if not chats.is_running(mid):
                    tally.incomplete += 1
                    break
                await asyncio.sleep(0.05)


async def run(turns: int, chats: int, chunks: int, chunk_delay: float, deadline: float, redis_url: str,
              database_url: str | None = None) -> dict[str, Any]:
    answer = "Alpha beta gamma delta epsilon zeta eta theta. " * max(1, chunks * 4 // 48)
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as fake:
        fake.handler = lambda body: Reply(content=answer, chunk_size=max(1, len(answer) // chunks),
                                          delay_per_chunk=chunk_delay)
        prefix = f"knora-hangs-{uuid.uuid4().hex[:8]}"
        settings = Settings(data_dir=Path(tmp), api_key="bench-key-" + uuid.uuid4().hex,
                            embedder="local:hash", sample_kb=False, chat_model="openai:fake-chat",
                            chat_base_url=fake.base_url, chat_api_key="k", stream_log="redis",
                            redis_url=redis_url, redis_prefix=prefix,
                            **({"database_url": database_url} if database_url else {}))
        services = await build_services(settings)
        tally = Tally()
        began = time.monotonic()
        try:
            todo = itertools.count()
            await asyncio.gather(*(chat(services, todo, turns, deadline, tally) for _ in range(chats)))
            wall = time.monotonic() - began
        finally:
            await services.aclose()
            import redis.asyncio as aioredis

            client = aioredis.Redis.from_url(redis_url)
            keys = [k async for k in client.scan_iter(f"{prefix}:*", count=1000)]
            for i in range(0, len(keys), 1000):
                await client.delete(*keys[i:i + 1000])
            await client.aclose()
    return {"turns": len(tally.times) + len(tally.hung), "concurrency": chats, "hung": len(tally.hung),
            "ended_by_stop": tally.stopped, "incomplete_messages": tally.incomplete,
            "turn_p50_s": round(pct(tally.times, 0.5), 3), "turn_p95_s": round(pct(tally.times, 0.95), 3),
            "wall_s": round(wall, 1), "chunks": chunks, "chunk_delay_s": chunk_delay}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--chats", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=30)
    parser.add_argument("--chunk-delay", type=float, default=0.01)
    parser.add_argument("--deadline", type=float, default=60.0, help="a turn not ended after this is hung")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--database-url", default=None)
    a = parser.parse_args()
    print(json.dumps(asyncio.run(run(a.turns, a.chats, a.chunks, a.chunk_delay, a.deadline, a.redis_url,
                                     a.database_url))), flush=True)


if __name__ == "__main__":
    main()
