"""Shared fixtures: real SQLite and PostgreSQL stores, Redis, a started container and an HTTP client.

PostgreSQL tests get a database of their own (created on 127.0.0.1:5432 and dropped afterwards), so several
test runs on one machine never see each other's rows. Redis tests get a key prefix of their own.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from knora.settings import Settings

PG_HOST = os.environ.get("KNORA_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("KNORA_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("KNORA_TEST_PG_USER", "postgres")
REDIS_URL = os.environ.get("KNORA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


async def _pg_admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, database="postgres")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session; yields its async SQLAlchemy URL."""
    name = f"knora_t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def pg_url(pg_database: str) -> Iterator[str]:
    """The session's PostgreSQL database, emptied after each test."""
    yield pg_database
    asyncio.run(_truncate_all(pg_database))


async def _truncate_all(url: str) -> None:
    import asyncpg

    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            """DO $$ DECLARE r record; BEGIN
               FOR r IN SELECT tablename FROM pg_tables
                        WHERE schemaname = 'public' AND tablename <> 'alembic_version'
               LOOP EXECUTE 'TRUNCATE TABLE ' || quote_ident(r.tablename) || ' RESTART IDENTITY CASCADE';
               END LOOP;
               END $$;"""
        )
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(db_backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if db_backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'knora.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    prefix = f"knora-test-{uuid.uuid4().hex[:10]}"
    yield prefix
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


TEST_API_KEY = "sk-test-key"


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings for a test: its own data dir, the fast hashing embedder, no sample KB; overrides as kwargs."""

    def _make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "data_dir": tmp_path / "data",
            "api_key": TEST_API_KEY,
            "embedder": "local:hash",
            "sample_kb": False,
        }
        values.update(overrides)
        return Settings(**values)

    return _make


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    """A started container on each database backend."""
    from knora.container import Container

    c = Container(make_settings(database_url=db_url))
    await c.start()
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def sqlite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    """A started container on the embedded default only (for tests that are not about the store)."""
    from knora.container import Container

    c = Container(make_settings())
    await c.start()
    try:
        yield c
    finally:
        await c.close()


def _client_for(c: Any) -> httpx.AsyncClient:
    from knora.api.app import create_app

    app = create_app(container=c)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://knora.test",
                             headers={"X-API-Key": TEST_API_KEY}, timeout=60)


@pytest.fixture
async def client(container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with _client_for(container) as http:
        yield http


@pytest.fixture
async def sqlite_client(sqlite_container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with _client_for(sqlite_container) as http:
        yield http


class RecordingRetrieval:
    """Stands in front of ``c.retrieval`` (or alone, if no engine is wired): forwards every write and keeps
    the visible index state (``rows`` by source id) and the call log, so ingestion tests can assert what got
    indexed."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.rows: dict[str, Any] = {}
        self.calls: list[tuple[str, Any]] = []
        self.fail_next_index: Exception | None = None

    name = "recording"
    capabilities = frozenset({"vector", "keyword"})

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def index(self, rows: Any) -> None:
        if self.fail_next_index is not None:
            exc, self.fail_next_index = self.fail_next_index, None
            raise exc
        self.calls.append(("index", [r.source_id for r in rows]))
        if self.inner is not None:
            await self.inner.index(rows)
        for r in rows:
            self.rows[r.source_id] = r

    async def delete_chunks(self, chunk_ids: Any) -> None:
        self.calls.append(("delete_chunks", list(chunk_ids)))
        if self.inner is not None:
            await self.inner.delete_chunks(chunk_ids)
        for sid in [s for s, r in self.rows.items() if r.chunk_id in set(chunk_ids)]:
            del self.rows[sid]

    async def delete_knowledge(self, knowledge_ids: Any) -> None:
        self.calls.append(("delete_knowledge", list(knowledge_ids)))
        if self.inner is not None:
            await self.inner.delete_knowledge(knowledge_ids)
        for sid in [s for s, r in self.rows.items() if r.knowledge_id in set(knowledge_ids)]:
            del self.rows[sid]

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        self.calls.append(("delete_knowledge_base", knowledge_base_id))
        if self.inner is not None:
            await self.inner.delete_knowledge_base(knowledge_base_id)
        for sid in [s for s, r in self.rows.items() if r.knowledge_base_id == knowledge_base_id]:
            del self.rows[sid]

    async def set_enabled(self, chunk_ids: Any, enabled: bool) -> None:
        self.calls.append(("set_enabled", (list(chunk_ids), enabled)))
        if self.inner is not None:
            await self.inner.set_enabled(chunk_ids, enabled)
        for r in self.rows.values():
            if r.chunk_id in set(chunk_ids):
                r.is_enabled = enabled

    async def search(self, query: Any) -> Any:
        if self.inner is None:
            return []
        return await self.inner.search(query)


def record_retrieval(c: Any) -> RecordingRetrieval:
    """Put a RecordingRetrieval in front of the container's engine (ingestion resolves ``c.retrieval``
    lazily)."""
    rec = RecordingRetrieval(getattr(c, "retrieval", None))
    c.retrieval = rec
    return rec
