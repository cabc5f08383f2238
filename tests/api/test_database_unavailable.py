"""Issue 20 item 10: a database that is down or busy answers 503 with the envelope and ``Retry-After``, never
a 500 or no response at all; other database errors stay 500."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import asyncpg
import asyncpg.exceptions as pg
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import exc as sa
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from knora.adapters.db.engine import make_engine
from knora.adapters.db.unavailable import unavailability
from knora.api.errors import install


def _app(raiser: Callable[[], object]) -> FastAPI:
    app = FastAPI()
    install(app)

    @app.post("/api/v1/thing")
    async def thing() -> object:
        result = raiser()
        if hasattr(result, "__await__"):
            await result  # type: ignore[misc]
        return {}

    return app


async def _post(app: FastAPI) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post("/api/v1/thing")


def _raise(exc: BaseException) -> Callable[[], object]:
    def go() -> object:
        raise exc
    return go


def _wrapped(orig: BaseException, cls: type[sa.DBAPIError] = sa.OperationalError,
             invalidated: bool = False) -> sa.DBAPIError:
    return cls("SELECT 1", {}, orig, connection_invalidated=invalidated)


DOWN = [
    ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)"),
    OSError("Multiple exceptions: [Errno 111] Connect call failed ('127.0.0.1', 5432)"),
    _wrapped(Exception("server closed the connection unexpectedly")),
    _wrapped(Exception("connection lost"), sa.InterfaceError),
    _wrapped(Exception("terminating connection"), sa.DBAPIError, invalidated=True),
    pg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    pg.AdminShutdownError("terminating connection due to administrator command"),
    pg.CannotConnectNowError("the database system is starting up"),
]
BUSY = [
    _wrapped(sqlite3.OperationalError("database is locked")),
    sa.TimeoutError("QueuePool limit of size 10 overflow 20 reached"),
    pg.TooManyConnectionsError("sorry, too many clients already"),
]


@pytest.mark.parametrize("exc", DOWN + BUSY, ids=lambda e: type(e).__name__)
async def test_database_unavailable_is_503_with_retry_after(exc: BaseException) -> None:
    resp = await _post(_app(_raise(exc)))
    assert resp.status_code == 503
    body = resp.json()
    assert body["success"] is False
    assert body["error"]["code"] == 1008
    wait = int(resp.headers["Retry-After"])
    assert body["error"]["details"]["retry_after"] == wait
    assert wait == (1 if exc in BUSY else 5)


@pytest.mark.parametrize("exc", [_wrapped(Exception("duplicate key"), sa.IntegrityError), ValueError("bug"),
                                 OSError(28, "No space left on device"),
                                 _wrapped(sqlite3.OperationalError("no such table: nope"))],
                         ids=["integrity", "bug", "disk-full", "sqlite-no-such-table"])
async def test_other_errors_stay_500(exc: BaseException) -> None:
    assert unavailability(exc) is None
    resp = await _post(_app(_raise(exc)))
    assert resp.status_code == 500
    assert resp.json()["error"]["code"] == 1007
    assert "Retry-After" not in resp.headers


async def test_a_really_locked_sqlite_file_is_503(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}", connect_args={"timeout": 0.05})

    async def write() -> None:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t VALUES (1)"))

    try:
        resp = await _post(_app(write))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        await engine.dispose()
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "1"
    assert "busy" in resp.json()["error"]["message"]


async def test_a_postgresql_server_that_is_not_there_is_503() -> None:
    engine = make_engine("postgresql+asyncpg://knora@127.0.0.1:1/knora")

    async def query() -> None:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    try:
        resp = await _post(_app(query))
    finally:
        await engine.dispose()
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "5"


async def test_a_postgresql_connection_killed_mid_query_is_503(pg_url: str) -> None:
    """The server ends the session while a request's query runs (what a restart or failover does)."""
    engine = make_engine(pg_url)
    marker = "knora_killed_mid_query"

    async def query() -> None:
        async with engine.connect() as conn:
            await conn.execute(text(f"SELECT pg_sleep(10) /* {marker} */"))

    async def kill() -> None:
        admin = await asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            for _ in range(100):
                killed = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE query LIKE $1 AND pid <> pg_backend_pid()", f"%{marker}%")
                if killed:
                    return
                await asyncio.sleep(0.05)
        finally:
            await admin.close()

    try:
        resp, _ = await asyncio.gather(_post(_app(query)), kill())
    finally:
        await engine.dispose()
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "5"
