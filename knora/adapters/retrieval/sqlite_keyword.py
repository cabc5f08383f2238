"""Keyword search of the embedded engine: BM25 from the in-memory :class:`KeywordIndex` (exact, fast), or from
FTS5 while that index loads. Scores are normalised by the query's ``Σ idf`` (see ``sqlite.py``)."""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from knora.adapters.retrieval import postings
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.postings import KeywordFilter, KeywordIndex
from knora.adapters.retrieval.postings_writes import collapse_log
from knora.adapters.retrieval.sqlite_store import _KW_COLS, SqliteStore
from knora.domain.search import EngineHit, MatchType
from knora.ports.retrieval import EngineQuery

log = logging.getLogger("knora.adapters.retrieval.sqlite")


# FTS5 fallback only (while the in-memory index loads, or with keyword_index=False): lossy pruning of very
# common query terms in large corpora. The KeywordIndex path is exact and does not prune.
PRUNE_MIN_ROWS = 20_000
PRUNE_DF = 0.05


class KeywordSearch(SqliteStore):
    """Mixin of the engine: the keyword index's life and both keyword paths."""

    def _idf_sum(self, conn: sqlite3.Connection, terms: list[str]) -> tuple[float, list[str]]:
        """Σ idf over the query terms, exactly as FTS5's bm25() computes idf (so the ratio is a coverage), and
        the terms worth matching: in a large corpus, terms in more than PRUNE_DF of the rows (low idf, huge
        posting lists) are left out of MATCH when rarer terms exist — they would make FTS5 score a third of
        the corpus for a few percent of the score. They still count in the normaliser."""
        head = self._head(conn)
        if self._count[0] != head:
            self._count = (head, int(conn.execute("SELECT count(*) FROM knora_ret_rows").fetchone()[0]))
        n_rows = self._count[1]
        # Document frequencies change only with a write, and every write moves the log head: cache them per
        # head (fts5vocab counts a term's rows by walking its posting list, ~6 ms per query at 100k rows).
        if self._df[0] != head or len(self._df[1]) > 100_000:
            self._df = (head, {})
        known = self._df[1]
        if missing := [t for t in terms if t not in known]:
            found = dict(conn.execute(
                f"SELECT term, doc FROM knora_ret_vocab WHERE term IN ({','.join('?' * len(missing))})",
                missing).fetchall())
            known.update({t: int(found.get(t, 0)) for t in missing})
        df = {t: known[t] for t in terms if known[t]}
        total = 0.0
        for t in terms:  # a term no row contains still counts: the row matched only part of the query
            n = df.get(t, 0)
            idf = math.log((n_rows - n + 0.5) / (n + 0.5))
            total += idf if idf > 0 else 1e-6
        present = sorted((t for t in terms if df.get(t)), key=lambda t: df[t])
        if n_rows >= PRUNE_MIN_ROWS:
            rare = [t for t in present if df[t] <= PRUNE_DF * n_rows]
            present = rare or present[:1]
        return total, present

    def _keyword(self, query: EngineQuery) -> list[EngineHit]:
        terms = tok.query_terms(query.text)
        if not terms:
            return []
        if self._kw_enabled:
            idx = self._kw_ready()
            if idx is not None:
                hits = self._keyword_fast(idx, terms, query)
                if hits is not None:
                    return hits
        return self._keyword_fts(terms, query)

    # --- keyword: in-memory postings ------------------------------------------------------------------------
    def _kw_ready(self) -> KeywordIndex | None:
        """The loaded keyword index, or None while it loads (the first call starts the load)."""
        idx = self._kw_index
        if idx is not None or self._kw_building:
            return idx
        with self._kw_state:
            if self._kw_index is not None or self._kw_building:
                return self._kw_index
            self._kw_building = True
        with self._kw_lock:
            top = self._kw_db().execute("SELECT max(id) FROM knora_ret_rows").fetchone()[0] or 0
        if top <= self._kw_sync_rows:
            self._kw_build()
            return self._kw_index
        threading.Thread(target=self._kw_build, name="knora-kw-index", daemon=True).start()
        return None

    def _kw_start_rebuild(self) -> None:
        with self._kw_state:
            if self._kw_building:
                return
            self._kw_building = True
        threading.Thread(target=self._kw_build, name="knora-kw-index", daemon=True).start()

    async def warm_keyword(self) -> None:
        """Load the keyword index now, wait for it and bring it up to the change log's head (benchmarks,
        warm-up)."""
        def run() -> None:
            if not self._kw_enabled:
                return
            if self._kw_ready() is None:
                while self._kw_building:
                    time.sleep(0.05)
            idx = self._kw_index
            if idx is not None:
                with self._kw_lock:
                    conn = self._kw_db()
                    head = self._head(conn)
                    if idx.seq < head:
                        self._kw_replay(idx, conn, head)
        await asyncio.to_thread(run)

    def keyword_index_info(self) -> dict[str, Any]:
        idx = self._kw_index
        if idx is None:
            return {"ready": False, "building": self._kw_building}
        return {"ready": True, "rows": len(idx), "postings": idx.postings, "segments": idx.segments,
                "mb": round(idx.nbytes() / 2**20, 1), "load_s": self._kw_load_s}

    def _kw_build(self) -> None:
        """Load the index from the rows' token-id blobs at one snapshot (its own connection), then swap it
        in."""
        t0 = time.perf_counter()
        try:
            self._kw_backfill()
            conn = sqlite3.connect(self._path, timeout=30, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA query_only=1")
                conn.execute("BEGIN")
                head = self._head(conn)
                cur = conn.execute(f"SELECT {_KW_COLS} ORDER BY r.id")
                legacy: list[int] = []

                def batches() -> Any:
                    while rows := cur.fetchmany(20_000):
                        if any(r[7] is None for r in rows):
                            legacy.extend(r[0] for r in rows if r[7] is None)
                            rows = [r for r in rows if r[7] is not None]
                        yield rows

                idx = KeywordIndex.load(batches())
                conn.execute("COMMIT")
            finally:
                conn.close()
            idx.seq = head
            if legacy:  # rows an older writer added after the backfill: fill them in, then add them
                self._kw_backfill()
                with self._kw_lock:
                    fetched = self._kw_fetch(self._kw_db(), legacy)
                idx.upsert(fetched)
                idx.seq = head
            self._kw_index = idx
            self._kw_load_s = round(time.perf_counter() - t0, 2)
            log.info("keyword index: %d rows, %d postings loaded in %.1f s", len(idx), idx.postings,
                     self._kw_load_s)
        except Exception:  # FTS5 keeps answering
            if self._conn is not None:
                log.exception("keyword index load failed; FTS5 answers keyword queries")
        finally:
            self._kw_building = False

    def _kw_backfill(self) -> None:
        """Token-id blobs for rows written before ``knora_ret_kw`` existed (a one-off migration)."""
        last = 0
        while True:
            with self._db_lock:
                rows = self._db().execute(
                    "SELECT r.id, r.content FROM knora_ret_rows r LEFT JOIN knora_ret_kw k ON k.id = r.id"
                    " WHERE r.id > ? AND k.id IS NULL ORDER BY r.id LIMIT 2000", (last,)).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            toks = [tok.tokenize(r[1]) for r in rows]

            def run(conn: sqlite3.Connection, rows: list[Any] = rows, toks: list[list[str]] = toks) -> None:
                ids = self._term_ids(conn, toks)
                present = {r[0] for r in rows}
                present &= {r[0] for r in conn.execute(  # rows deleted meanwhile get no blob
                    f"SELECT id FROM knora_ret_rows WHERE id IN ({','.join('?' * len(rows))})",
                    [r[0] for r in rows])}
                conn.executemany("INSERT OR IGNORE INTO knora_ret_kw(id, kw) VALUES (?, ?)",
                                 [(r[0], blob) for r, blob in zip(rows, postings.encode_rows(toks, ids),
                                                                  strict=True) if r[0] in present])

            self._write(run)

    def _kw_fetch(self, conn: sqlite3.Connection, ids: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            out.extend(conn.execute(f"SELECT {_KW_COLS} WHERE r.id IN ({','.join('?' * len(part))})",
                                    part).fetchall())
        return out

    def _kw_replay(self, idx: KeywordIndex, conn: sqlite3.Connection, head: int) -> bool:
        """Apply the change log since ``idx.seq`` (kw lock held). False when the log no longer reaches back
        that far: the index is dropped and reloaded in the background."""
        first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
        if first is None or first[0] > idx.seq + 1:
            self._kw_index = None
            self._kw_start_rebuild()
            return False
        deleted, upserted = collapse_log(conn.execute(
            "SELECT row_id, op FROM knora_ret_log WHERE seq > ? AND seq <= ? ORDER BY seq", (idx.seq, head)))
        rows = self._kw_fetch(conn, upserted)
        if any(r[7] is None for r in rows):  # written by an older version: backfill, read again
            self._kw_backfill()
            rows = self._kw_fetch(conn, upserted)
        idx.apply_log(deleted, upserted, [r for r in rows if r[7] is not None], head)
        if idx.needs_rebuild():
            self._kw_start_rebuild()
        return True

    def _kw_term_ids(self, conn: sqlite3.Connection, terms: list[str]) -> list[int | None]:
        cache = self._kw_terms
        missing = [t for t in terms if t not in cache]
        if missing:
            if len(cache) > 200_000:
                cache.clear()
            cache.update(conn.execute(
                f"SELECT term, id FROM knora_ret_terms WHERE term IN ({','.join('?' * len(missing))})",
                missing).fetchall())
        return [cache.get(t) for t in terms]

    def _keyword_fast(self, idx: KeywordIndex, terms: list[str],
                      query: EngineQuery) -> list[EngineHit] | None:
        flt = KeywordFilter(knowledge_base_ids=list(query.knowledge_base_ids),
                            knowledge_ids=list(query.knowledge_ids), tag_ids=list(query.tag_ids),
                            knowledge_type=query.knowledge_type, only_recommended=query.only_recommended)
        with self._kw_lock:
            conn = self._kw_db()
            head = self._head(conn)
            if idx.seq < head and not self._kw_replay(idx, conn, head):
                return None
            found, norm = idx.search(self._kw_term_ids(conn, terms), query.top_k, query.threshold, flt)
            if not found or norm <= 0:
                return []
            ids = [rid for rid, _ in found]
            rows = conn.execute(f"SELECT id, chunk_id, source_id, content FROM knora_ret_rows"
                                f" WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
        by_id = {r[0]: r for r in rows}
        return [EngineHit(chunk_id=by_id[rid][1], source_id=by_id[rid][2], score=max(s, 0.0) / norm,
                          match_type=MatchType.KEYWORDS, content=by_id[rid][3])
                for rid, s in found if rid in by_id]

    # --- keyword: FTS5 (fallback) ---------------------------------------------------------------------------
    def _keyword_fts(self, terms: list[str], query: EngineQuery) -> list[EngineHit]:
        match = tok.fts5_match(terms)
        if not match:
            return []
        where = ["knora_ret_fts MATCH ?", "r.is_enabled = 1", "r.knowledge_type = ?"]
        params: list[Any] = [match, query.knowledge_type]
        for col, vals in (("r.kb_id", query.knowledge_base_ids), ("r.knowledge_id", query.knowledge_ids),
                          ("r.tag_id", query.tag_ids)):
            if vals:
                where.append(f"{col} IN ({','.join('?' * len(vals))})")
                params.extend(vals)
        if query.only_recommended:
            where.append("r.is_recommended = 1")
        with self._kw_lock:
            conn = self._kw_db()
            norm, scored = self._idf_sum(conn, terms)
            if norm <= 0 or not scored:
                return []
            params[0] = tok.fts5_match(scored)
            if query.threshold > 0:  # normalised >= t  <=>  bm25 <= -t * norm (FTS5's bm25 is negative)
                where.append("bm25(knora_ret_fts) <= ?")
                params.append(-query.threshold * norm)
            sql = (f"SELECT r.chunk_id, r.source_id, r.content, -bm25(knora_ret_fts) AS s FROM knora_ret_fts"
                   f" JOIN knora_ret_rows r ON r.id = knora_ret_fts.rowid WHERE {' AND '.join(where)}"
                   f" ORDER BY bm25(knora_ret_fts) LIMIT ?")
            params.append(query.top_k)
            rows = conn.execute(sql, params).fetchall()
        return [EngineHit(chunk_id=c, source_id=s, score=max(score, 0.0) / norm,
                          match_type=MatchType.KEYWORDS, content=content) for c, s, content, score in rows]
