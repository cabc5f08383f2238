"""Two real server processes sharing PostgreSQL and the Redis stream log: start on A, resume and stop on B."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_API_KEY
from tests.services.streaming.live import frames
from tests.services.streaming.runners import EXPANDED
from tests.services.streaming.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

SCRIPT = Path(__file__).with_name("serve_app.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(proc: subprocess.Popen[bytes], url: str) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        import time

        time.sleep(0.05)
    raise RuntimeError("server did not start")


@pytest.fixture
def servers(pg_url: str, redis_prefix: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    procs: list[subprocess.Popen[bytes]] = []
    urls = []
    try:
        for name in ("a", "b"):  # one after the other: the first one migrates the shared database
            port = free_port()
            proc = subprocess.Popen([sys.executable, str(SCRIPT), str(port), pg_url, redis_prefix,
                                     str(tmp_path / name)], stderr=subprocess.PIPE)
            procs.append(proc)
            url = f"http://127.0.0.1:{port}"
            wait_healthy(proc, url)
            urls.append(url)
        yield urls[0], urls[1]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
async def pair(servers: tuple[str, str]) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    headers = {"X-API-Key": TEST_API_KEY}
    async with httpx.AsyncClient(base_url=servers[0] + "/api/v1", headers=headers, timeout=60) as a, \
            httpx.AsyncClient(base_url=servers[1] + "/api/v1", headers=headers, timeout=60) as b:
        yield a, b


async def test_start_on_a_resume_on_b_then_stop_on_b(pair: tuple[httpx.AsyncClient,
                                                                 httpx.AsyncClient]) -> None:
    a, b = pair
    sid = (await a.post("/sessions", json={"title": "replicas"})).json()["data"]["id"]
    async with a.stream("POST", f"/knowledge-chat/{sid}", json={"query": "q"}) as live:
        it = frames(live)
        seen = []
        async for f in it:
            if f is None:
                continue
            seen.append(f)
            if f["response_type"] == "answer":
                break
        mid = seen[0]["assistant_message_id"]
        # B replays A's turn from the shared log and follows it live
        async with b.stream("GET", f"/sessions/continue-stream/{sid}", params={"message_id": mid}) as resumed:
            rit = frames(resumed)
            replayed = []
            async for f in rit:
                if f is None:
                    continue
                replayed.append(f)
                if len(replayed) == len(seen) + 2:
                    break
            assert replayed[:len(seen)] == seen
            stop = await b.post(f"/sessions/{sid}/stop", json={"message_id": mid})
            assert stop.json() == {"success": True, "message": "Generation stopped"}
            replayed += [f async for f in rit if f is not None]
        rest = [f async for f in it if f is not None]
    assert rest[-1]["response_type"] == "stop"
    assert rest[-1]["content"] == "Generation stopped by user"
    assert replayed[-1]["response_type"] == "stop"
    assert replayed[-1]["data"]["reason"] == "user_requested"
    live_answer = "".join(f["content"] for f in seen + rest if f["response_type"] == "answer")
    assert live_answer
    assert live_answer != EXPANDED
    assert EXPANDED.startswith(live_answer)
    assert "".join(f["content"] for f in replayed if f["response_type"] == "answer") == live_answer
    for _ in range(100):  # A saves the partial answer right after appending the stop entry
        msgs = (await b.get(f"/messages/{sid}/load")).json()["data"]
        if msgs[-1]["is_completed"]:
            break
        await asyncio.sleep(0.05)
    assert msgs[-1]["is_completed"]
    assert msgs[-1]["content"] == live_answer
    assert not msgs[-1]["is_fallback"]


async def test_a_turn_on_a_replays_completely_on_b(pair: tuple[httpx.AsyncClient, httpx.AsyncClient]) -> None:
    a, b = pair
    sid = (await a.post("/sessions", json={"title": "replicas"})).json()["data"]["id"]
    r = await a.post(f"/knowledge-chat/{sid}", json={"query": "q"})
    live = parse_sse(r.content)
    mid = live.frames[0]["assistant_message_id"]
    replay = parse_sse((await b.get(f"/sessions/continue-stream/{sid}", params={"message_id": mid})).content)
    assert replay.frames == live.frames
    assert live.answer() == EXPANDED
    cursor = parse_sse((await b.get(f"/sessions/continue-stream/{sid}", params={"message_id": mid},
                                    headers={"Last-Event-ID": "5"})).content)
    assert cursor.frames == live.frames[6:]
    done = await b.post(f"/sessions/{sid}/stop", json={"message_id": mid})
    assert done.json() == {"success": True, "message": "Message already completed"}
