"""SQLAlchemy implementation of :class:`knora.ports.search_store.SearchStore` (read-only; owned by retrieval).

Batched ``IN`` queries (chunks of 500 ids) so hydrating a 500-hit result costs one or two round trips per
table.

On a SQLite file every read runs as one call on a worker thread, through a synchronous engine on the same file
(query-only connections): through aiosqlite a read was four or five hops between the event loop and the
driver's thread (begin, execute, fetch, rollback, release), 1–4 ms on a busy 2-core machine for a 10-row
lookup that SQLite answers in ~0.1 ms. WAL mode lets these readers run beside the writer; each read is its own
transaction, so it sees everything committed before it started, as before.

On PostgreSQL every read runs on a pooled connection in autocommit mode: a read is one statement (or two),
and a transaction around it only added a ``BEGIN`` and a ``ROLLBACK`` round trip to each — at READ COMMITTED
each statement sees what was committed before it started either way. A search's knowledge bases come with the
tenant's retrieval config in the same statement (a scalar subquery), hydration's chunks with their documents
in one join, so a search reads the metadata store in two statements.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import JSON, DateTime, Engine, bindparam, create_engine, event, inspect, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, sessionmaker

from knora.adapters.db.repos._mapping import _row_fields, row_to, select_columns
from knora.adapters.db.tables import (
    Base,
    ChunkRow,
    KnowledgeBaseRow,
    KnowledgeRow,
    ShareRow,
    TagRow,
    TenantRow,
)
from knora.domain.access import KB_SHARE
from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase

_BATCH = 500
# Column-only selects: hydration reads hundreds of rows per search, and building ORM objects for them cost
# more than the queries themselves.
_CHUNK_COLS = select_columns(Chunk, ChunkRow)
_KNOWLEDGE_COLS = select_columns(Knowledge, KnowledgeRow)
_KNOWLEDGE_ID_AT = [c.key for c in _KNOWLEDGE_COLS].index("id")
# Statements built once (building a 30-column select and its cache key per read cost more than running it).
_IDS: Any = bindparam("ids", expanding=True)
_CHUNKS_BY_ID = select(*_CHUNK_COLS).where(ChunkRow.id.in_(_IDS))
_KNOWLEDGE_BY_ID = select(*_KNOWLEDGE_COLS).where(KnowledgeRow.id.in_(_IDS))
_CHUNKS_WITH_KNOWLEDGE = (select(*_CHUNK_COLS, *_KNOWLEDGE_COLS)
                          .outerjoin(KnowledgeRow, KnowledgeRow.id == ChunkRow.knowledge_id)
                          .where(ChunkRow.id.in_(_IDS)))
M = TypeVar("M", bound=BaseModel)


@cache
def _datetime_at(model: type[BaseModel], row_cls: type[Base]) -> frozenset[int]:
    """Positions of the timestamp columns in ``select_columns(model, row_cls)`` (SQLite returns them
    naive)."""
    columns = inspect(row_cls).columns
    return frozenset(n for n, (key, _) in enumerate(_row_fields(model, row_cls))
                     if isinstance(columns[key].type, DateTime))


def _record(model: type[M], row_cls: type[Base], values: Sequence[Any]) -> M:
    """``values_to`` for the hot path: only timestamp columns are looked at (stored in UTC, zone put back)."""
    names = _row_fields(model, row_cls)
    data = {name: v for (_, name), v in zip(names, values, strict=True)}
    for n in _datetime_at(model, row_cls):
        v = values[n]
        if isinstance(v, datetime) and v.tzinfo is None:
            data[names[n][1]] = v.replace(tzinfo=UTC)
    return model.model_validate(data)


T = TypeVar("T")


def _sync_engine(sessions: async_sessionmaker[AsyncSession]) -> Engine | None:
    """A synchronous engine on the same SQLite file, or None (another database, or an in-memory one)."""
    bind = sessions.kw.get("bind")
    url = getattr(bind, "url", None)
    if url is None or url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:") \
            or str(url.database).startswith("file:"):
        return None
    engine = create_engine(url.set(drivername="sqlite+pysqlite"),
                           connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA query_only=ON")  # these connections only ever read
        cur.close()

    return engine


def _pg_engine(sessions: async_sessionmaker[AsyncSession]) -> AsyncEngine | None:
    """The sessions' engine in autocommit mode (the same pool) on PostgreSQL, else None."""
    bind = sessions.kw.get("bind")
    if not isinstance(bind, AsyncEngine) or bind.dialect.name != "postgresql":
        return None
    return bind.execution_options(isolation_level="AUTOCOMMIT")


def _batches(ids: Sequence[Any]) -> list[list[Any]]:
    uniq = list(dict.fromkeys(i for i in ids if i is not None and i != ""))
    return [uniq[i : i + _BATCH] for i in range(0, len(uniq), _BATCH)]


class SqlSearchReads:
    READ_THREADS = 4  # their own threads: a read never queues behind vector scans or embeddings

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._pg = _pg_engine(sessions)
        self._engine = _sync_engine(sessions)
        self._sync = sessionmaker(self._engine) if self._engine is not None else None
        self._threads: ThreadPoolExecutor | None = None

    async def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
        if self._engine is not None:
            await asyncio.to_thread(self._engine.dispose)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(session, *args)``: in one worker-thread call on SQLite, else in the async session."""
        if self._sync is not None:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.READ_THREADS, thread_name_prefix="knora-reads")
            return await asyncio.get_running_loop().run_in_executor(self._threads, self._read_sync, fn, *args)
        async with self._sessions() as s:
            return await s.run_sync(fn, *args)

    async def _pg_fetch(self, sql: str, *args: Any) -> list[Any]:
        """One statement through asyncpg itself on a pooled connection, no transaction around it: the hot
        reads' rows as asyncpg decodes them (SQLAlchemy's result processing and its greenlet hops cost more
        than the statement)."""
        assert self._pg is not None
        async with self._pg.connect() as conn:
            raw = await conn.get_raw_connection()
            return [tuple(r) for r in await raw.driver_connection.fetch(sql, *args)]  # type: ignore[union-attr]

    def _read_sync(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._sync is not None
        with self._sync() as s:
            return fn(s, *args)

    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]:
        return await self._read(_knowledge_bases, kb_ids)

    async def tenant_retrieval_config(self, tenant_id: int) -> dict[str, Any]:
        return await self._read(_tenant_retrieval_config, tenant_id)

    async def shared_kb_ids(self, tenant_id: int, kb_ids: Sequence[str]) -> set[str]:
        return await self._read(_shared_kb_ids, tenant_id, kb_ids) if kb_ids else set()

    async def knowledge_bases_with_tenant_config(self, kb_ids: Sequence[str], tenant_id: int
                                                 ) -> tuple[list[KnowledgeBase], dict[str, Any]]:
        """``knowledge_bases`` and ``tenant_retrieval_config`` in one call (a search needs both); on
        PostgreSQL in one statement (the tenant's config a scalar subquery on every row)."""
        if self._pg is None:
            return await self._read(_knowledge_bases_with_tenant_config, kb_ids, tenant_id)
        parts = _batches(kb_ids)
        if len(parts) != 1:
            return await self._read(_knowledge_bases_with_tenant_config, kb_ids, tenant_id)
        rows = await self._pg_fetch(_pg_kbs_with_config(), parts[0], tenant_id)
        if not rows:  # no knowledge base: the config still comes from its own read
            return [], await self.tenant_retrieval_config(tenant_id)
        out = {kb.id: kb for kb in (_kb_values(r[:-1]) for r in rows)}
        value = rows[0][-1]
        return ([out[i] for i in dict.fromkeys(kb_ids) if i in out],
                dict(value) if isinstance(value, dict) else {})

    async def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return await self._read(_by_ids, Chunk, ChunkRow, _CHUNKS_BY_ID, chunk_ids)

    async def knowledge(self, knowledge_ids: Sequence[str]) -> list[Knowledge]:
        return await self._read(_by_ids, Knowledge, KnowledgeRow, _KNOWLEDGE_BY_ID, knowledge_ids)

    async def chunks_with_knowledge(self, chunk_ids: Sequence[str], *, neighbours_below: int = 0
                                    ) -> tuple[list[Chunk], list[Knowledge]]:
        """The chunks and their documents in one query (a left join: a chunk whose document is gone still
        comes back, without it) — hydration's two reads in one round trip. With ``neighbours_below`` > 0 the
        previous and next chunks of every text chunk shorter than that (in characters) come back too, in the
        same call: they are what the chat pipeline's merge reads next to lengthen short passages."""
        if self._pg is None:
            return await self._read(_chunks_with_knowledge, chunk_ids, neighbours_below)
        rows: list[Sequence[Any]] = []
        for part in _batches(chunk_ids):
            rows += await self._pg_fetch(_pg_join(), part)
        chunks, docs = _joined(rows)
        for part in _batches(_neighbours(chunks, neighbours_below)):
            chunks += [_record(Chunk, ChunkRow, r) for r in await self._pg_fetch(_pg_chunks(), part)]
        return chunks, docs

    async def knowledge_ids_with_tags(self, kb_id: str, tag_ids: Sequence[str]) -> list[str]:
        return await self._read(_knowledge_ids_with_tags, kb_id, tag_ids)

    async def tag_kbs(self, tag_ids: Sequence[str]) -> dict[str, str]:
        return await self._read(_tag_kbs, tag_ids)


# --- the reads (synchronous session code; run by ``SqlSearchReads._read``) ----------------------------------
def _shared_kb_ids(s: Session, tenant_id: int, kb_ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for part in _batches(kb_ids):
        found.update(s.scalars(select(ShareRow.resource_id).where(
            ShareRow.resource_type == KB_SHARE, ShareRow.tenant_id == tenant_id,
            ShareRow.resource_id.in_(part))).all())
    return found


def _kb_record(row: KnowledgeBaseRow) -> KnowledgeBase:
    for c in ("indexing_strategy", "retrieval_config", "chunking_config"):
        if not isinstance(getattr(row, c), dict):
            setattr(row, c, {})
    return row_to(KnowledgeBase, row)


def _knowledge_bases(s: Session, kb_ids: Sequence[str]) -> list[KnowledgeBase]:
    out: dict[str, KnowledgeBase] = {}
    for part in _batches(kb_ids):
        for row in s.scalars(select(KnowledgeBaseRow).where(KnowledgeBaseRow.id.in_(part))).all():
            out[row.id] = _kb_record(row)
    return [out[i] for i in dict.fromkeys(kb_ids) if i in out]


def _knowledge_bases_with_tenant_config(s: Session, kb_ids: Sequence[str], tenant_id: int
                                        ) -> tuple[list[KnowledgeBase], dict[str, Any]]:
    return _knowledge_bases(s, kb_ids), _tenant_retrieval_config(s, tenant_id)


def _tenant_retrieval_config(s: Session, tenant_id: int) -> dict[str, Any]:
    value = s.scalar(select(TenantRow.retrieval_config).where(TenantRow.id == tenant_id))
    return dict(value) if isinstance(value, dict) else {}


def _by_ids(s: Session, record: type[BaseModel], row: type[Base], stmt: Any, ids: Sequence[str]) -> list[Any]:
    """Plain-column reads by primary key, in batches (hydration is on the search hot path)."""
    out: list[Any] = []
    for part in _batches(ids):
        out.extend(_record(record, row, r) for r in s.execute(stmt, {"ids": part}))
    return out


@cache
def _raw_join() -> tuple[str, tuple[tuple[int, Callable[[Any], Any]], ...]]:
    """SQLite: the chunk + document join as plain SQL over ``json_each(?)`` (one statement for any number of
    ids), and per column what turns the stored value into what the model takes: JSON text → value, stored
    (naive UTC) timestamp → aware datetime, the rest as stored. SQLAlchemy's own result processing (a regex
    per timestamp, a JSON decoder object per value) was the largest part of hydrating a search's results."""
    cols = [*_CHUNK_COLS, *_KNOWLEDGE_COLS]
    names = ", ".join(f'{c.class_.__tablename__}."{c.expression.name}"' for c in cols)
    ck, kk = ChunkRow.__tablename__, KnowledgeRow.__tablename__
    sql = (f"SELECT {names} FROM {ck} LEFT OUTER JOIN {kk} ON {kk}.id = {ck}.knowledge_id"
           f" WHERE {ck}.id IN (SELECT value FROM json_each(?))")
    conv: list[tuple[int, Callable[[Any], Any]]] = []
    for i, c in enumerate(cols):
        if isinstance(c.type, JSON):
            conv.append((i, json.loads))
        elif isinstance(c.type, DateTime):
            conv.append((i, lambda v: datetime.fromisoformat(v).replace(tzinfo=UTC)))
    return sql, tuple(conv)


def _join_rows(s: Session, ids: Sequence[str]) -> Iterable[Sequence[Any]]:
    if s.get_bind().dialect.name != "sqlite":
        return s.execute(_CHUNKS_WITH_KNOWLEDGE, {"ids": list(ids)})
    sql, conv = _raw_join()
    out: list[list[Any]] = []
    for r in s.connection().exec_driver_sql(sql, (json.dumps(list(ids)),)).fetchall():
        row = list(r)
        for i, f in conv:
            if isinstance(row[i], str):  # NULL stays None; SQLite hands JSON and timestamps back as text
                row[i] = f(row[i])
        out.append(row)
    return out


def _joined(rows: Iterable[Sequence[Any]]) -> tuple[list[Chunk], list[Knowledge]]:
    """Chunk + document rows of the join as records (a document once, however many of its chunks)."""
    chunks: list[Chunk] = []
    docs: dict[str, Knowledge] = {}
    n = len(_CHUNK_COLS)
    for r in rows:
        chunk = _record(Chunk, ChunkRow, r[:n])
        chunks.append(chunk)
        if r[n + _KNOWLEDGE_ID_AT] is not None and chunk.knowledge_id not in docs:
            docs[chunk.knowledge_id] = _record(Knowledge, KnowledgeRow, r[n:])
    return chunks, list(docs.values())


def _neighbours(chunks: Sequence[Chunk], below: int) -> list[str]:
    """The previous and next chunk ids of the text chunks shorter than ``below``, not already in
    ``chunks``."""
    if below <= 0:
        return []
    have = {c.id for c in chunks}
    return [i for c in chunks if c.chunk_type == "text" and len(c.content) < below
            for i in (c.pre_chunk_id, c.next_chunk_id) if i and i not in have]


def _chunks_with_knowledge(s: Session, chunk_ids: Sequence[str], neighbours_below: int = 0
                           ) -> tuple[list[Chunk], list[Knowledge]]:
    rows: list[Sequence[Any]] = []
    for part in _batches(chunk_ids):
        rows += list(_join_rows(s, part))
    chunks, docs = _joined(rows)
    chunks += _by_ids(s, Chunk, ChunkRow, _CHUNKS_BY_ID, _neighbours(chunks, neighbours_below))
    return chunks, docs


# --- PostgreSQL: the hot reads as plain SQL through asyncpg (``SqlSearchReads._pg_fetch``) -----------------
_KB_COLS = select_columns(KnowledgeBase, KnowledgeBaseRow)
_KB_DICTS = frozenset(n for n, c in enumerate(_KB_COLS)
                      if c.key in ("indexing_strategy", "retrieval_config", "chunking_config"))


def _names(cols: Sequence[Any]) -> str:
    return ", ".join(f'{c.class_.__tablename__}."{c.expression.name}"' for c in cols)


# Rows come back as the model takes them: the SQLAlchemy dialect registers asyncpg codecs for ``json`` and
# ``jsonb`` on every connection of the pool (decoded values), and ``timestamptz`` columns are aware datetimes.
@cache
def _pg_join() -> str:
    cols = [*_CHUNK_COLS, *_KNOWLEDGE_COLS]
    ck, kk = ChunkRow.__tablename__, KnowledgeRow.__tablename__
    return (f"SELECT {_names(cols)} FROM {ck} LEFT OUTER JOIN {kk} ON {kk}.id = {ck}.knowledge_id"
            f" WHERE {ck}.id = ANY($1::text[])")


@cache
def _pg_chunks() -> str:
    return (f"SELECT {_names(_CHUNK_COLS)} FROM {ChunkRow.__tablename__}"
            f" WHERE {ChunkRow.__tablename__}.id = ANY($1::text[])")


@cache
def _pg_kbs_with_config() -> str:
    """The knowledge bases' columns, then the tenant's retrieval config."""
    kb, tenants = KnowledgeBaseRow.__tablename__, TenantRow.__tablename__
    return (f"SELECT {_names(_KB_COLS)}, (SELECT {tenants}.retrieval_config FROM {tenants}"
            f" WHERE {tenants}.id = $2) FROM {kb} WHERE {kb}.id = ANY($1::text[])")


def _kb_values(values: Sequence[Any]) -> KnowledgeBase:
    fixed = [({} if i in _KB_DICTS and not isinstance(v, dict) else v) for i, v in enumerate(values)]
    return _record(KnowledgeBase, KnowledgeBaseRow, fixed)


def _knowledge_ids_with_tags(s: Session, kb_id: str, tag_ids: Sequence[str]) -> list[str]:
    out: list[str] = []
    for part in _batches(tag_ids):
        out.extend(s.scalars(select(KnowledgeRow.id).where(
            KnowledgeRow.knowledge_base_id == kb_id, KnowledgeRow.tag_id.in_(part))).all())
    return out


def _tag_kbs(s: Session, tag_ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _batches(tag_ids):
        for tid, kb in s.execute(select(TagRow.id,
                                        TagRow.knowledge_base_id).where(TagRow.id.in_(part))).all():
            out[tid] = kb
    return out
