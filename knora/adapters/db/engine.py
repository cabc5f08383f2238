"""Engine and session factory for the metadata store, and running migrations."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from knora.adapters.db.textfold import register_sqlite

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

# PostgreSQL advisory lock keys (one number space per database; the retrieval engine uses 774411/774412)
MIGRATION_LOCK = 774401  # held by the migration transaction
STARTUP_LOCK = 774402  # held across a process's whole first-start work (migrations, default tenant and key)


_EMPTY_JSON: dict[type, str] = {list: "[]", dict: "{}"}


def json_dumps(value: Any) -> str:
    """``json.dumps`` for JSON columns, without its cost for the empty lists and dicts most of them hold (a
    chat turn's two message rows carry ten JSON values, nine of them empty)."""
    if not value and type(value) in _EMPTY_JSON:
        return _EMPTY_JSON[type(value)]
    return json.dumps(value)


def make_engine(url: str, **kwargs: Any) -> AsyncEngine:
    kwargs.setdefault("json_serializer", json_dumps)
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30}, **kwargs)

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()
            register_sqlite(dbapi_conn)

        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    kwargs.setdefault("pool_pre_ping", True)
    # Bounded waits while the server is down or saturated (asyncpg's connect default is 60 s, the pool's
    # 30 s): a request fails over to a 503 in seconds instead of outliving its client (issue 20 item 10).
    kwargs.setdefault("pool_timeout", 10)
    kwargs.setdefault("connect_args", {"timeout": 10})
    return create_async_engine(url, **kwargs)


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision (idempotent).

    On PostgreSQL the migration transaction first takes an advisory lock: replicas started at once on an empty
    database run the migrations one after the other (the first creates everything, the others find the
    schema at head and do nothing) instead of racing on ``CREATE TABLE alembic_version`` (issue 16 item 3).
    PostgreSQL's DDL is transactional, so a replica that dies mid-migration leaves nothing half-made and
    releases the lock with its connection."""

    def _upgrade(conn: Connection) -> None:
        command.upgrade(alembic_config(conn), "head")

    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(_upgrade)


@asynccontextmanager
async def startup_lock(engine: AsyncEngine) -> AsyncIterator[None]:
    """One process at a time through the block on PostgreSQL (a session advisory lock on a connection of its
    own, released when the block ends or the process dies); nothing on SQLite, where one machine's processes
    serialise their writes anyway. For first-start work that reads, then writes (the default tenant and its
    key), which two replicas would otherwise both do."""
    if engine.dialect.name != "postgresql":
        yield
        return
    async with engine.connect() as conn:
        await conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": STARTUP_LOCK})
        await conn.commit()  # the lock is the session's: no transaction stays open while the block runs
        try:
            yield
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": STARTUP_LOCK})
            await conn.commit()
