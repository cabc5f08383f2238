"""``kill -9`` mid-turn, then a restart, with real processes on PostgreSQL and the Redis log (issue 20, 6c).

Before: ``continue-stream`` on the restarted process replayed the partial answer and then sent keep-alives
until the log's TTL (an hour), and the message stayed incomplete. Now the restarted process closes the turn
once the dead process's lease lapses: the resumed stream ends with an error then ``complete``, and the
message is saved with the text the log holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_API_KEY
from tests.services.streaming.live import frames
from tests.services.streaming.runners import EXPANDED
from tests.services.streaming.test_replicas import SCRIPT, free_port, wait_healthy

pytestmark = [pytest.mark.integration, pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow,
              pytest.mark.timeout(120)]

LEASE_S = "2"
DELAY_S = "0.3"  # ~45 deltas: the turn runs ~13 s, well past the kill


def launch(pg_url: str, prefix: str, data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "KNORA_TURN_LEASE_SECONDS": LEASE_S}
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(port), pg_url, prefix, str(data_dir), DELAY_S],
                            stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url)
    return proc, url


def client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url + "/api/v1", headers={"X-API-Key": TEST_API_KEY}, timeout=60)


async def test_a_restart_after_kill_9_ends_the_resumed_stream_and_saves_the_partial_answer(
        pg_url: str, redis_prefix: str, tmp_path: Path) -> None:
    first, url = launch(pg_url, redis_prefix, tmp_path / "a")
    try:
        async with client(url) as a:
            sid = (await a.post("/sessions", json={"title": "kill"})).json()["data"]["id"]
            seen = []
            async with a.stream("POST", f"/knowledge-chat/{sid}", json={"query": "q"}) as live:
                async for f in frames(live):
                    if f is None:
                        continue
                    seen.append(f)
                    if sum(x["response_type"] == "answer" for x in seen) >= 3:
                        first.kill()  # kill -9: no cleanup of any kind
                        break
        first.wait(timeout=20)
    finally:
        if first.poll() is None:
            first.kill()
    mid = seen[0]["assistant_message_id"]
    seen_answer = "".join(f["content"] for f in seen if f["response_type"] == "answer")

    second, url = launch(pg_url, redis_prefix, tmp_path / "b")
    try:
        async with client(url) as b:
            async with b.stream("GET", f"/sessions/continue-stream/{sid}", params={"message_id": mid}) as r:
                resumed = [f async for f in frames(r) if f is not None]  # ends: no keep-alives for an hour
            kinds = [f["response_type"] for f in resumed]
            assert kinds[-1] == "complete"
            assert "error" in kinds
            answer = "".join(f["content"] for f in resumed if f["response_type"] == "answer")
            assert answer.startswith(seen_answer)
            assert answer != EXPANDED
            msgs = (await b.get(f"/messages/{sid}/load")).json()["data"]
            assert msgs[-1]["is_completed"]
            assert msgs[-1]["content"] == answer
    finally:
        second.terminate()
        try:
            second.wait(timeout=20)
        except subprocess.TimeoutExpired:
            second.kill()
