"""Streaming benchmarks; prints one JSON line.

1. ``latency``: append → follower delivery through the StreamLog port, one event at a time (no queueing), for
   the memory log and the Redis log (goals: p50 ≤ 2 ms memory, ≤ 5 ms Redis). The follower is a separate task
   reading with ``follow()`` exactly as the SSE route does; for Redis every hop goes through the server.
2. ``concurrency``: N chat turns started at once (or arriving evenly over ``--ramp`` seconds) in one process
   (``ChatService.start``: session lookup, message pair, request state — the HTTP route's work minus HTTP
   parsing), each streamed by a token-rate fake model (``--tokens`` deltas, default 300 — a typical answer's
   length — ``--token-interval`` seconds apart, with citations; open-loop: it sends on its own clock as a
   model server does, ``--closed-loop`` for the older fake whose rate drops with any delay) and consumed
   through the SSE frame generator the HTTP route returns (``stream_frames``; the frames are parsed, not sent
   over a socket). Every consumer compares the frames it got with the turn's log entry by entry
   (``lost_events``, ``duplicated_events``), checks the frame order (agent_query first, references before
   answer, complete last), and the saved message must hold exactly the streamed answer with its references
   (``saved_complete``). Under load the bus merges a stream's deltas (``knora/services/streaming/pacing.py``):
   the check is on the whole text, the token rate counts model tokens, and ``answer_frames_per_chat_p50`` /
   ``hold_ms_*`` show the merging. Reported: turn start latency, first-token overhead (time to the first
   answer frame minus the fake's own first interval), each chat's delivered token rate against the fake's,
   ``keep_up_ratio`` per chat = model time / (request → complete) — p10 ≥ 0.9 means nine chats in ten finished
   within 1/0.9 of the model's own time (``keeps_up``) — wall vs model time, and CPU per delivered event
   (``cpu_us_per_event``: noise-free where wall time depends on what else the machine runs).
   On a loaded machine the fake alone oversleeps (its timers fire late), so each run first times N fakes alone
   (``fake_alone_wall_s``) and reports ``keep_up_vs_fake_alone`` = that time / the run's wall time.
3. ``--sweep 100,200,…``: the concurrency run at each level; ``max_chats_keeping_up`` is the largest level
   that keeps up with no lost or duplicated event and every answer saved (``…_vs_fake_alone``: against the
   fakes' own pace).

    python benchmarks/stream.py [--events 2000] [--chats 1000 | --sweep 100,200,400] [--tokens 300]
                                [--token-interval 0.02] [--no-redis] [--stream-log memory|redis]
                                [--ramp 0] [--frame-budget N] [--closed-loop]
                                [--database-url postgresql+asyncpg://…]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.domain.stream import BusEvent, StreamEvent
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest

ANSWER_FRAME = b'"response_type":"answer","content":"'  # an answer frame with text (empty: the done frame)
KB_TAG = re.compile(r"<kb\b[^>]*>")
KEEP_UP = 0.9  # a chat keeps up when it ends within 1/0.9 of the time the model alone needs


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


async def paced(tokens: int, interval: float, closed_loop: bool) -> AsyncIterator[int]:
    """Token numbers at the fake's rate. A model server sends on its own clock (token ``i`` is due ``i + 1``
    intervals after the first request byte) and what the client did not read yet waits in the socket, so a
    late reader gets the overdue tokens at once. ``closed_loop`` instead sleeps one interval after each token
    is handled: any delay of the process then lowers the model's own rate (the benchmark's behaviour before
    2026-12)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i in range(tokens):
        if closed_loop:
            await asyncio.sleep(interval)
        else:
            wait = start + (i + 1) * interval - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
        yield i


class TokenRateModel:
    """A fake model as a TurnRunner: ``tokens`` answer deltas at a fixed rate, with citations."""

    def __init__(self, tokens: int, interval: float, closed_loop: bool = False) -> None:
        self.tokens, self.interval, self.closed_loop = tokens, interval, closed_loop

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        from knora.domain.search import SearchResult

        refs = [SearchResult(id=str(uuid.uuid4()), content="x", knowledge_id="d", knowledge_title="Doc")]
        ctx.references.register_search_results(refs)
        await ctx.bus.emit(BusEvent.REFERENCES, {"references": [r.model_dump() for r in refs]})
        parts = []
        async for i in paced(self.tokens, self.interval, self.closed_loop):
            delta = 'tok<ref id="c1"/> ' if i % 10 == 9 else "tok "  # each delta holds one "tok"
            parts.append(delta)
            await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": delta, "done": False, "event_id": "a"})
        await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": "", "done": True, "event_id": "a"})
        return TurnOutcome(answer="".join(parts), references=refs, model_id="fake:token-rate")


def expected_answer(tokens: int) -> str:
    """What a client must see of the fake's answer: its deltas, each ``<ref id="c1"/>`` expanded to a kb
    tag."""
    return "".join("tok<kb/> " if i % 10 == 9 else "tok " for i in range(tokens))


def _check(frames: list[dict[str, Any]], log_events: list[Any], tokens: int) -> tuple[int, int, bool]:
    """(lost, duplicated, well_formed): the frames a client got against the turn's log, entry by entry."""
    got = [(f["response_type"], f["content"], f["done"]) for f in frames]
    want = [(e.type, e.content, e.done) for e in log_events]
    lost = dup = 0
    i = j = 0
    while i < len(want) and j < len(got):  # both in order: a gap is a lost entry, an extra one a duplicate
        if want[i] == got[j]:
            i += 1
            j += 1
        elif got[j] in want[i + 1:]:
            lost += 1
            i += 1
        else:
            dup += 1
            j += 1
    lost += len(want) - i
    dup += len(got) - j
    return lost, dup, well_formed(frames, tokens)


def well_formed(frames: list[dict[str, Any]], tokens: int) -> bool:
    """agent_query first, references before the answer, complete last, the fake's whole answer in order.

    Under load the stream handler merges a stream's deltas into fewer frames (pacing.py): the text must be
    whole and in order, and exactly one answer frame is the done mark."""
    types = [f["response_type"] for f in frames]
    answers = [f for f in frames if f["response_type"] == "answer"]
    return (bool(types) and types[0] == "agent_query" and types[-1] == "complete"
            and "references" in types and bool(answers)
            and types.index("references") < types.index("answer")
            and KB_TAG.sub("<kb/>", "".join(f["content"] for f in answers)) == expected_answer(tokens)
            and sum(1 for f in answers if f["done"]) == 1)


async def concurrency(chats: int, tokens: int, interval: float, database_url: str | None = None,
                      stream_log: str = "memory", redis_url: str = "redis://127.0.0.1:6379/0",
                      frame_budget: int | None = None, ramp: float = 0.0,
                      closed_loop: bool = False) -> dict[str, Any]:
    """``chats`` turns started at once; each consumed through the SSE frame generator of the HTTP route."""
    from knora.root import Overrides, build_services
    from knora.services.streaming.intake import ChatBody
    from knora.services.streaming.sse import stream_frames
    from knora.settings import Settings
    from tests.fakes.retrieval import RecordingRetrieval

    prefix = f"knora-bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        # streams are what is measured: an engine that only records (no pgvector needed on PostgreSQL)
        no_retrieval = Overrides(engine=lambda _s: RecordingRetrieval())
        c: Any = await build_services(Settings(
            data_dir=Path(tmp), api_key="sk-bench", embedder="local:hash", sample_kb=False,
            database_url=database_url, stream_log=stream_log,  # type: ignore[arg-type]
            redis_url=redis_url, redis_prefix=prefix,
            **({} if frame_budget is None else {"stream_frame_budget": frame_budget})), no_retrieval)
        c.runners.quick = TokenRateModel(tokens, interval, closed_loop)
        tenant = c.default_tenant_id
        sessions = [await c.session_service.create(tenant, title="bench") for _ in range(chats)]
        gc.collect()
        gc.freeze()  # as ``knora serve`` does once the container is started
        lost = dup = malformed = 0
        start_ms: list[float] = []
        first_ms: list[float] = []
        ratio: list[float] = []
        stream_rate: list[float] = []
        frames_per_chat: list[int] = []
        tail_ms: list[float] = []
        ideal = tokens * interval

        async def one(sid: str, delay: float) -> tuple[str, str, list[bytes], list[tuple[float, int]], float]:
            # The client side does as little as possible while the clock runs: frames are kept, checked later.
            if delay:
                await asyncio.sleep(delay)
            t_req = time.perf_counter()
            turn = await c.chat_service.start(tenant, sid, ChatBody(query="q"), str(uuid.uuid4()))
            start_ms.append((time.perf_counter() - t_req) * 1000)
            frames: list[bytes] = []
            answer_at: list[tuple[float, int]] = []
            async for raw in stream_frames(c.stream_log, sid, turn.assistant_message_id, turn.request_id,
                                           live=True):
                frames.append(raw)
                if ANSWER_FRAME in raw:
                    answer_at.append((time.perf_counter(), raw.count(b"tok")))
            t_end = time.perf_counter()
            if answer_at:  # the last answer text → ``complete`` (done mark, completion write, complete entry)
                tail_ms.append((t_end - answer_at[-1][0]) * 1000)
            ratio.append(ideal / (t_end - t_req))
            return sid, turn.assistant_message_id, frames, answer_at, t_req

        async def fake_alone(delay: float) -> None:  # the fake's own pace on this machine now, without Knora
            if delay:
                await asyncio.sleep(delay)
            async for _ in paced(tokens, interval, closed_loop):
                pass

        t_fake = time.perf_counter()
        await asyncio.gather(*(fake_alone(ramp * i / chats) for i in range(chats)))
        fake_wall = time.perf_counter() - t_fake

        holds: list[float] = []

        async def sample_hold() -> None:  # the pacer's hold while the chats run (pacing.py)
            while True:
                await asyncio.sleep(0.1)
                holds.append(c.chat_service.pacer.hold * 1000)

        sampler = asyncio.create_task(sample_hold())
        t0, cpu0 = time.perf_counter(), time.process_time()
        done = await asyncio.gather(*(one(s.id, ramp * i / chats) for i, s in enumerate(sessions)))
        await c.chat_service.wait_idle()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        sampler.cancel()
        saved_ok = events_total = 0
        for sid, mid, raws, answer_at, t_req in done:
            frames = [json.loads(r.split(b"data:", 1)[1]) for r in raws if not r.startswith(b":")]
            events = await c.stream_log.read(sid, mid)
            events_total += len(events)
            a, b, ok = _check(frames, events, tokens)
            lost, dup, malformed = lost + a, dup + b, malformed + (not ok)
            text = "".join(f["content"] for f in frames if f["response_type"] == "answer")
            # the fake sleeps one interval before its first token: what is left is the process's overhead
            first_ms.append((answer_at[0][0] - t_req - interval) * 1000 if answer_at else float("inf"))
            # model tokens a client got per second after its first frame (merged or not)
            if len(answer_at) > 1:
                later = sum(n for _, n in answer_at[1:])
                stream_rate.append(later / (answer_at[-1][0] - answer_at[0][0]))
            frames_per_chat.append(len(answer_at))
            m = await c.session_service.get_message(tenant, mid)
            saved_ok += bool(m and m.is_completed and m.content == text
                             and m.content.count("<kb ") == tokens // 10 and len(m.knowledge_references) == 1)
        if stream_log == "redis":
            client = c.stream_log._client
            keys = [k async for k in client.scan_iter(f"{prefix}*")]
            for i in range(0, len(keys), 500):
                await client.delete(*keys[i:i + 500])
        await c.aclose()
    gc.unfreeze()
    rate = 1 / interval
    return {"database": "postgresql" if database_url else "sqlite", "stream_log": stream_log, "chats": chats,
            "frame_budget": c.settings.stream_frame_budget, "ramp_s": ramp,
            "fake": "closed-loop" if closed_loop else "open-loop",
            "tokens_per_chat": tokens, "token_interval_s": interval, "model_time_s": ideal,
            "wall_s": round(wall, 3), "slowdown": round(wall / (ideal + ramp), 3),
            "cpu_s": round(cpu, 3), "cpu_us_per_event": round(cpu * 1e6 / max(events_total, 1), 1),
            # chats a whole free core keeps up with at this CPU cost (the process's CPU seconds per model
            # second)
            "cpu_bound_chats_per_core": int(chats * ideal / cpu) if cpu else None,
            "turn_start_ms_p50": round(statistics.median(start_ms), 1),
            "turn_start_ms_p99": round(pct(start_ms, .99), 1),
            "first_token_overhead_ms_p50": round(statistics.median(first_ms), 1),
            "first_token_overhead_ms_p99": round(pct(first_ms, .99), 1),
            "fake_tokens_per_s": rate,
            "answer_frames_per_chat_p50": statistics.median(frames_per_chat) if frames_per_chat else None,
            "end_ms_p50": round(statistics.median(tail_ms), 1) if tail_ms else None,
            "end_ms_p99": round(pct(tail_ms, .99), 1) if tail_ms else None,
            "hold_ms_p50": round(statistics.median(holds), 1) if holds else 0.0,
            "hold_ms_max": round(max(holds), 1) if holds else 0.0,
            "chat_tokens_per_s_p50": round(statistics.median(stream_rate), 1) if stream_rate else None,
            "chat_tokens_per_s_p10": round(pct(stream_rate, .10), 1) if stream_rate else None,
            "keep_up_ratio_p50": round(statistics.median(ratio), 3),
            "keep_up_ratio_p10": round(pct(ratio, .10), 3),
            "keeps_up": pct(ratio, .10) >= KEEP_UP,
            # On a loaded machine the fake itself oversleeps: the same N fakes alone, just before the run
            "fake_alone_wall_s": round(fake_wall, 3),
            "keep_up_vs_fake_alone": round(fake_wall / wall, 3),
            "keeps_up_vs_fake_alone": fake_wall / wall >= KEEP_UP,
            "lost_events": lost, "duplicated_events": dup, "malformed_streams": malformed,
            "saved_complete": saved_ok, "events": events_total,
            "delivered_tokens_per_s": round(chats * tokens / wall, 1)}


async def sweep(levels: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Concurrency levels in increasing order; the largest whose slowest tenth of chats keeps up."""
    rows = []
    best = best_relative = 0
    for n in levels:
        row = await concurrency(n, args.tokens, args.token_interval, args.database_url, args.stream_log,
                                args.redis_url, args.frame_budget, args.ramp, args.closed_loop)
        rows.append({k: row[k] for k in ("chats", "keep_up_ratio_p50", "keep_up_ratio_p10",
                                         "chat_tokens_per_s_p10",
                                         "turn_start_ms_p50", "turn_start_ms_p99",
                                         "first_token_overhead_ms_p50",
                                         "first_token_overhead_ms_p99", "cpu_s", "cpu_us_per_event",
                                         "cpu_bound_chats_per_core", "wall_s", "fake_alone_wall_s",
                                         "keep_up_vs_fake_alone",
                                         "slowdown", "lost_events", "duplicated_events", "saved_complete")})
        intact = not row["lost_events"] and not row["duplicated_events"] and row["saved_complete"] == n
        if intact and row["keeps_up"]:
            best = max(best, n)
        if intact and row["keeps_up_vs_fake_alone"]:
            best_relative = max(best_relative, n)
    return {"database": "postgresql" if args.database_url else "sqlite", "stream_log": args.stream_log,
            "levels": rows, "max_chats_keeping_up": best, "max_chats_keeping_up_vs_fake_alone": best_relative}


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
    if args.sweep:
        out["sweep"] = await sweep([int(x) for x in args.sweep.split(",")], args)
    elif args.chats:
        out["concurrency"] = await concurrency(args.chats, args.tokens, args.token_interval,
                                               args.database_url,
                                               args.stream_log, args.redis_url, args.frame_budget, args.ramp,
                                               args.closed_loop)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--token-interval", type=float, default=0.02)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis latency measurement")
    parser.add_argument("--stream-log", choices=("memory", "redis"), default="memory",
                        help="the stream log of the concurrency run")
    parser.add_argument("--frame-budget", type=int, default=None,
                        help="settings.stream_frame_budget (text events/s per process; "
                        "0 = one event per delta)")
    parser.add_argument("--ramp", type=float, default=0.0,
                        help="seconds over which the chats arrive, evenly (0: all at the same instant)")
    parser.add_argument("--closed-loop", action="store_true",
                        help="the fake sleeps one interval after each token is handled (its rate drops with "
                        "any delay of the process) instead of sending on its own clock like a model server")
    parser.add_argument("--sweep", default="",
                        help="comma-separated concurrency levels, e.g. 100,200,400,1000")
    parser.add_argument("--database-url", default=None, help="e.g. postgresql+asyncpg://postgres@127.0.0.1/x "
                        "(an empty database; default: a temporary SQLite file)")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                        help="event loop: auto = uvloop when installed, as `knora serve` (uvicorn) picks it")
    ns = parser.parse_args()
    use_uvloop = ns.loop == "uvloop"
    if ns.loop == "auto":
        try:
            import uvloop

            use_uvloop = True
        except ImportError:
            use_uvloop = False
    if use_uvloop:
        import uvloop

        result = uvloop.run(main(ns))
    else:
        result = asyncio.run(main(ns))
    print(json.dumps({**result, "loop": "uvloop" if use_uvloop else "asyncio"}))
