"""How long a user waits on a model that does not answer, and whether a stop closes the model request.

Whole quick-answer turns through the chat service (no knowledge base, so the turn is one streamed model
call) against the fake OpenAI-compatible server, the model reached as configured by default (the openai
client's 120 s timeout and 2 retries). Prints one JSON line per case:

* ``hung``: the model accepts the request and never sends a byte;
* ``stall``: it sends a few deltas, then goes silent;
* ``retry_after``: it answers 429 with ``Retry-After: 30`` every time;
* ``aclose``: the model stream closed by its reader (``aclose()``) after one delta, garbage collection paused:
  whether the server saw the request closed;
* ``stop``: a 200-delta answer at 0.1 s per delta (20 s) stopped after 1 s: whether (and how soon after the
  stop) the server saw the client close the request, and whether that was before the answer would have ended.

    python benchmarks/model_wait.py [--cases hung,stall,retry_after,stop,aclose] [--limit 400] [--repeat 1] \
        [--log-latency 0.05]
    KNORA_MODEL_FIRST_TOKEN_SECONDS=0 KNORA_MODEL_STALL_SECONDS=0 python benchmarks/model_wait.py  # no bounds
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from knora.root import build_services
from knora.services.streaming.intake import ChatBody
from knora.settings import Settings
from tests.fakes.model_server import FakeModelServer, Reply

HUNG = 1000.0  # seconds the fake stays silent: longer than any bound measured here


def reply_for(body: dict[str, Any]) -> Reply:
    """The scripted behaviour of the case named in the request (cases run at once on one fake server)."""
    text = json.dumps(body.get("messages", []))
    if not body.get("stream"):
        return Reply(content="ok")  # any non-streamed helper call (none is expected without a knowledge base)
    if "case hung" in text:
        return Reply(content="never", delay=HUNG)
    if "case stall" in text:
        return Reply(content="x" * 40, chunk_size=2, stall_after_chunks=4, stall=HUNG)
    if "case retry_after" in text:
        return Reply(status=429, error="slow down", headers={"Retry-After": "30"})
    return Reply(content="y" * 200, chunk_size=1, delay_per_chunk=0.1)  # stop


async def run_turn(services: Any, fake: FakeModelServer, case: str, limit: float) -> dict[str, Any]:
    tenant = services.default_tenant_id
    session = await services.session_service.create(tenant, title="bench")
    began = time.monotonic()
    turn = await services.chat_service.start(tenant, session.id, ChatBody(query=f"case {case}"),
                                             str(uuid.uuid4()))
    chat, log = services.chat_service, services.stream_log
    stopped_at = None
    if case == "stop":
        await asyncio.sleep(1.0)
        stopped_at = time.monotonic()
        await chat.stop(tenant, session.id, turn.assistant_message_id)
    ended: str | None = None
    while time.monotonic() - began < limit:
        events = await log.read(session.id, turn.assistant_message_id)
        kinds = [e.type for e in events]
        if "complete" in kinds or "stop" in kinds:
            errors = [e.content or str(e.data.get("error", "")) for e in events if e.type == "error"]
            ended = ("stop" if "stop" in kinds else "complete") + (f" after error: {errors[0]}"
                                                                   if errors else "")
            break
        await asyncio.sleep(0.1)
    waited = time.monotonic() - began
    result: dict[str, Any] = {"case": case, "turn_ended": ended or f"not within {limit:g} s",
                              "seconds": round(waited, 2)}
    if stopped_at is not None:
        await asyncio.sleep(3.0)  # the request may be closed late (garbage collection) — give it time
        closes = [t for t in fake.disconnects if t >= stopped_at]
        result["model_request_closed"] = bool(closes)
        result["closed_seconds_after_stop"] = round(closes[0] - stopped_at, 2) if closes else None
        result["answer_would_end_seconds_after_stop"] = round(began + 20.0 - stopped_at, 2)
    await chat.wait_idle()
    return result


def slow_down(log: Any, seconds: float) -> None:
    append = log.append

    async def slow_append(*a: Any, **kw: Any) -> Any:
        await asyncio.sleep(seconds)
        return await append(*a, **kw)

    log.append = slow_append


async def aclose_case(services: Any, fake: FakeModelServer) -> dict[str, Any]:
    """The agent's pattern: read a delta of the slow answer, then ``aclose()`` the model stream (what a stop
    or a failure does). Cyclic garbage collection is paused while the server is watched, so a request that
    only garbage collection would close shows as open."""
    from knora.ports.chat import ChatMessage

    model = await services.chat_models.get(None)
    stream = model.stream([ChatMessage(role="user", content="case aclose")])
    async for _ in stream:
        break  # one delta, then leave, keeping the stream to close it as the agent does
    closed_at = time.monotonic()
    gc.disable()
    try:
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.sleep(3.0)
    finally:
        gc.enable()
    closes = [t for t in fake.disconnects if t >= closed_at]
    return {"case": "aclose", "model_request_closed": bool(closes),
            "closed_seconds_after_aclose": round(closes[0] - closed_at, 2) if closes else None}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="hung,stall,retry_after,stop")
    parser.add_argument("--limit", type=float, default=400.0, help="longest a case is watched, seconds")
    parser.add_argument("--repeat", type=int, default=1, help="stop turns to run (at once)")
    parser.add_argument("--log-latency", type=float, default=0.0,
                        help="seconds added to every stream-log append, like a Redis round trip: a stop then "
                        "often lands while the turn waits on the log, not on the model")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c and c != "stop"]
    cases += ["stop"] * (args.repeat if "stop" in args.cases.split(",") else 0)
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as fake:
        fake.handler = reply_for
        settings = Settings(data_dir=Path(tmp), api_key="bench-key-" + uuid.uuid4().hex,
                            embedder="local:hash", sample_kb=False, chat_model="openai:fake-chat",
                            chat_base_url=fake.base_url, chat_api_key="k")
        services = await build_services(settings)
        if args.log_latency:
            slow_down(services.stream_log, args.log_latency)
        try:
            settings_seen = {k: getattr(settings, k, "absent")
                             for k in ("model_first_token_seconds", "model_stall_seconds")}
            print(json.dumps({"settings": settings_seen}), flush=True)
            turns = [c for c in cases if c != "aclose"]
            for result in await asyncio.gather(*(run_turn(services, fake, c, args.limit) for c in turns)):
                print(json.dumps(result, ensure_ascii=False), flush=True)
            if "aclose" in cases:
                print(json.dumps(await aclose_case(services, fake)), flush=True)
        finally:
            await services.aclose()


if __name__ == "__main__":
    asyncio.run(main())
