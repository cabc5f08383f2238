"""The embedded engine's storage: its tables in the metadata store's SQLite file, connections, every write.

Split from ``sqlite.py`` (the engine) so that storage, vector search (``sqlite_vectors.py``) and keyword
search (``sqlite_keyword.py``) each read as one concern. Every write runs in one ``BEGIN IMMEDIATE``
transaction and appends to the change log (``knora_ret_log``) that the in-memory vector sets and keyword
index replay; the engine-wide state they share (connections, locks, loaded sets, the keyword index) is created
here.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from knora.adapters.retrieval import postings
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.hnsw_file import file_for
from knora.adapters.retrieval.postings import KeywordIndex
from knora.adapters.retrieval.postings_writes import DELETE, UPSERT
from knora.adapters.retrieval.vectors import VectorSet
from knora.domain.search import IndexRow
from knora.pacing import sheltered

log = logging.getLogger("knora.adapters.retrieval.sqlite")  # the records keep the engine's logger


_LOG_KEEP = 200_000  # change-log entries kept; a reader further behind reloads its sets
# the rows' token lists, and their vectors as (unit-length float32 bytes, dimension) or (None, 0)
_Prepared = tuple[list[list[str]], list[tuple[bytes | None, int]]]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS knora_ret_rows (
  id INTEGER PRIMARY KEY,
  source_id TEXT NOT NULL UNIQUE,
  chunk_id TEXT NOT NULL,
  knowledge_id TEXT NOT NULL,
  kb_id TEXT NOT NULL,
  tenant_id INTEGER NOT NULL,
  tag_id TEXT,
  is_enabled INTEGER NOT NULL DEFAULT 1,
  is_recommended INTEGER NOT NULL DEFAULT 1,
  knowledge_type TEXT NOT NULL DEFAULT 'document',
  content TEXT NOT NULL,
  dim INTEGER NOT NULL DEFAULT 0,
  embedding BLOB
);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_chunk ON knora_ret_rows(chunk_id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_knowledge ON knora_ret_rows(knowledge_id);
CREATE INDEX IF NOT EXISTS ix_knora_ret_rows_kb ON knora_ret_rows(kb_id, dim);
CREATE VIRTUAL TABLE IF NOT EXISTS knora_ret_fts USING fts5(tokens, tokenize = 'ascii');
CREATE VIRTUAL TABLE IF NOT EXISTS knora_ret_vocab USING fts5vocab(knora_ret_fts, 'row');
CREATE TABLE IF NOT EXISTS knora_ret_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kb_id TEXT NOT NULL,
  row_id INTEGER NOT NULL,
  op INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_knora_ret_log_kb ON knora_ret_log(kb_id, seq);
CREATE TABLE IF NOT EXISTS knora_ret_kw (
  id INTEGER PRIMARY KEY,
  kw BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS knora_ret_terms (
  id INTEGER PRIMARY KEY,
  term TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS knora_ret_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_UPSERT, _DELETE = UPSERT, DELETE
# What the keyword index reads per row (postings.Row): filter columns and the token-id blob (NULL: not yet
# written)
_KW_COLS = ("r.id, r.kb_id, r.knowledge_id, r.tag_id, r.is_enabled, r.is_recommended, r.knowledge_type, k.kw"
            " FROM knora_ret_rows r LEFT JOIN knora_ret_kw k ON k.id = r.id")
_COLS = "id, chunk_id, knowledge_id, tag_id, is_enabled, is_recommended, knowledge_type, dim, embedding"




class SqliteStore:
    """Tables, connections and writes of :class:`~knora.adapters.retrieval.sqlite.SqliteEngine`."""

    def __init__(self, path: Path, *, ann_min_rows: int = 200_000, keyword_index: bool = True,
                 kw_sync_rows: int = 50_000, index_dir: Path | None = None, ann_dtype: str = "i8") -> None:
        self._path = path
        self._ann_min_rows = ann_min_rows
        self._index_dir = index_dir  # where HNSW graphs are saved; None: rebuilt at every start
        self._ann_dtype = ann_dtype
        self._db_id = ""
        self._conn: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()
        self._sets: dict[tuple[str, int], VectorSet] = {}
        self._sets_lock = threading.Lock()
        self._count: tuple[int, int] = (-1, 0)  # (log head, row count) for idf
        # Keyword queries run on a second, read-only connection so that a long BM25 scan does not hold the
        # lock the concurrent vector query of the same search needs (WAL: readers see every committed write).
        self._kw_conn: sqlite3.Connection | None = None
        self._kw_lock = threading.Lock()
        # Vector reads (the change log, rows of a set, hits) on a third one, so that a search never waits for
        # a write in progress: a 50 MB document's one index transaction runs for tens of seconds, and every
        # chat turn's search waited behind it when the reads shared the writer's connection and lock.
        self._vec_conn: sqlite3.Connection | None = None
        self._vec_lock = threading.Lock()
        self._df: tuple[int, dict[str, int]] = (-1, {})  # (log head, term -> rows containing it)
        # In-memory BM25 postings (exact FTS5 scores); None until loaded. Up to kw_sync_rows rows the first
        # keyword query loads it in line, above that a background thread does while FTS5 answers.
        self._kw_enabled = keyword_index
        self._kw_sync_rows = kw_sync_rows
        self._kw_index: KeywordIndex | None = None
        self._kw_building = False
        self._kw_state = threading.Lock()
        self._kw_load_s: float | None = None
        self._kw_terms: dict[str, int] = {}  # reader side: term -> id (ids never change once committed)
        self._w_terms: dict[str, int] = {}  # writer side, same; cleared when a write rolls back

    def _open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self._path, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        # A random id for this database, so that a saved graph is never applied to another database's rows.
        conn.execute("INSERT OR IGNORE INTO knora_ret_meta(key, value) VALUES ('db_id', ?)",
                     (uuid.uuid4().hex,))
        self._db_id = conn.execute("SELECT value FROM knora_ret_meta WHERE key = 'db_id'").fetchone()[0]
        self._conn = conn
        self._kw_conn = self._reader()
        self._vec_conn = self._reader()

    def _reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA query_only=1")
        return conn

    async def close(self) -> None:
        with self._sets_lock:
            sets = list(self._sets.values())
        for vs in sets:  # leave each graph file exact at the set's sequence (saves only what changed)
            await asyncio.to_thread(vs.close)
        for reader in (self._kw_conn, self._vec_conn):
            if reader is not None:
                await asyncio.to_thread(reader.close)
        self._kw_conn = self._vec_conn = None
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)
        self._sets.clear()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("SqliteEngine is not started")
        return self._conn

    def _vec_db(self) -> sqlite3.Connection:
        if self._vec_conn is None:
            raise RuntimeError("SqliteEngine is not started")
        return self._vec_conn

    def _kw_db(self) -> sqlite3.Connection:
        if self._kw_conn is None:
            raise RuntimeError("SqliteEngine is not started")
        return self._kw_conn

    # --- writes ---------------------------------------------------------------------------------------------
    def _write(self, fn: Any, *args: Any) -> None:
        with self._db_lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                fn(conn, *args)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                self._w_terms.clear()  # term ids assigned in the rolled-back transaction are void
                raise
        self._maybe_trim()

    @staticmethod
    def _delete_where(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
        gone = conn.execute(f"DELETE FROM knora_ret_rows WHERE {where} RETURNING id, kb_id",
                            params).fetchall()
        if gone:
            conn.executemany("DELETE FROM knora_ret_fts WHERE rowid = ?", [(r[0],) for r in gone])
            conn.executemany("DELETE FROM knora_ret_kw WHERE id = ?", [(r[0],) for r in gone])
            conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)",
                             [(r[1], r[0], _DELETE) for r in gone])

    def _index(self, conn: sqlite3.Connection, rows: Sequence[IndexRow], prepared: _Prepared) -> None:
        toks, vectors = prepared
        ids = [r.source_id for r in rows]
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            self._delete_where(conn, f"source_id IN ({','.join('?' * len(part))})", part)
        # Row ids are assigned here (the write lock is held), so all three tables load with executemany.
        top = conn.execute("SELECT max(id) FROM knora_ret_rows").fetchone()[0] or 0
        data, fts, kw, log = [], [], [], []
        blobs = postings.encode_rows(toks, self._term_ids(conn, toks))
        for n, r, tt, blob, (emb, dim) in zip(range(top + 1, top + 1 + len(rows)), rows, toks, blobs, vectors,
                                              strict=True):
            data.append((n, r.source_id, r.chunk_id, r.knowledge_id, r.knowledge_base_id, r.tenant_id,
                         r.tag_id or None, int(r.is_enabled), int(r.is_recommended), r.knowledge_type,
                         r.content, dim, emb))
            fts.append((n, " ".join(tt)))
            kw.append((n, blob))
            log.append((r.knowledge_base_id, n, _UPSERT))
        conn.executemany(
            "INSERT INTO knora_ret_rows(id, source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id,"
            " is_enabled, is_recommended, knowledge_type, content, dim, embedding)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", data)
        conn.executemany("INSERT INTO knora_ret_fts(rowid, tokens) VALUES (?, ?)", fts)
        conn.executemany("INSERT INTO knora_ret_kw(id, kw) VALUES (?, ?)", kw)
        conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)", log)

    def _term_ids(self, conn: sqlite3.Connection, toks: Sequence[Sequence[str]]) -> dict[str, int]:
        """Ids of every token in ``toks`` from the term dictionary, adding new terms (write lock held, so ids
        are assigned in commit order and never clash with another writer's)."""
        cache = self._w_terms
        if len(cache) > 2_000_000:
            cache.clear()
        missing = set(chain.from_iterable(toks)).difference(cache)
        if not missing:
            return cache
        want = list(missing)
        for i in range(0, len(want), 500):
            part = want[i : i + 500]
            cache.update(conn.execute(
                f"SELECT term, id FROM knora_ret_terms WHERE term IN ({','.join('?' * len(part))})",
                part).fetchall())
        new = [t for t in want if t not in cache]
        if new:
            top = conn.execute("SELECT max(id) FROM knora_ret_terms").fetchone()[0]
            start = 0 if top is None else top + 1
            pairs = list(zip(range(start, start + len(new)), new, strict=True))
            conn.executemany("INSERT INTO knora_ret_terms(id, term) VALUES (?, ?)", pairs)
            cache.update((t, i) for i, t in pairs)
        return cache

    async def index(self, rows: Sequence[IndexRow]) -> None:
        if rows:
            await asyncio.to_thread(self._index_prepared, list(rows))

    def _index_prepared(self, rows: list[IndexRow]) -> None:
        """Tokenises and normalises ``rows`` before taking the writer's lock (stepping aside for chat turns),
        then writes them in one transaction: a 50 MB document's 150k rows held that lock for tens of seconds
        with the tokenising inside it. Searches read on their own connections and do not wait for it.
        (Several smaller transactions were tried: each made every search replay a slice of the change log
        into the keyword index, inline, and turns were slower for longer.)"""
        self._write(self._index, rows, _prepare(rows))

    async def rows_for_knowledge(self, knowledge_ids: Sequence[str]) -> list[IndexRow]:
        """The rows of these documents as indexed, vectors included (unit length, as stored)."""
        vals = list(knowledge_ids)

        def run() -> list[IndexRow]:
            out: list[IndexRow] = []
            with self._db_lock:
                conn = self._db()
                for i in range(0, len(vals), 500):
                    part = vals[i : i + 500]
                    for r in conn.execute(
                            "SELECT source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id, is_enabled,"
                            " is_recommended, knowledge_type, content, embedding FROM knora_ret_rows"
                            f" WHERE knowledge_id IN ({','.join('?' * len(part))})", part):
                        out.append(IndexRow(
                            source_id=r[0], chunk_id=r[1], knowledge_id=r[2], knowledge_base_id=r[3],
                            tenant_id=r[4], tag_id=r[5], is_enabled=bool(r[6]), is_recommended=bool(r[7]),
                            knowledge_type=r[8], content=r[9],
                            embedding=(np.frombuffer(r[10], dtype=np.float32).tolist()
                                       if r[10] is not None else None)))
            return out

        return await asyncio.to_thread(run)

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        await self._delete_in("chunk_id", chunk_ids)

    async def delete_knowledge(self, knowledge_ids: Sequence[str]) -> None:
        await self._delete_in("knowledge_id", knowledge_ids)

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        await self._delete_in("kb_id", [knowledge_base_id])
        await asyncio.to_thread(self._drop_graphs, knowledge_base_id)

    def _drop_graphs(self, kb_id: str) -> None:
        """A deleted KB's vector sets stop their background work and their saved graph files leave the
        disk."""
        with self._sets_lock:
            gone = [self._sets.pop(key) for key in [k for k in self._sets if k[0] == kb_id]]
        for vs in gone:
            vs.close(save=False, wait=True)
        if self._index_dir is None or not self._db_id:
            return
        stem = file_for(self._index_dir, self._db_id, kb_id, 0).name.rsplit("-d", 1)[0]
        for path in self._index_dir.glob(f"{stem}-d*"):
            path.unlink(missing_ok=True)

    async def _delete_in(self, column: str, values: Sequence[str]) -> None:
        vals = list(values)
        if not vals:
            return

        def run(conn: sqlite3.Connection) -> None:
            for i in range(0, len(vals), 500):
                part = vals[i : i + 500]
                self._delete_where(conn, f"{column} IN ({','.join('?' * len(part))})", part)

        await asyncio.to_thread(self._write, run)

    async def set_enabled(self, chunk_ids: Sequence[str], enabled: bool) -> None:
        vals = list(chunk_ids)
        if not vals:
            return

        def run(conn: sqlite3.Connection) -> None:
            for i in range(0, len(vals), 500):
                part = vals[i : i + 500]
                changed = conn.execute(
                    "UPDATE knora_ret_rows SET is_enabled = ?"
                    f" WHERE chunk_id IN ({','.join('?' * len(part))})"
                    " RETURNING id, kb_id", [int(enabled), *part]).fetchall()
                conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)",
                                 [(r[1], r[0], _UPSERT) for r in changed])

        await asyncio.to_thread(self._write, run)

    def _maybe_trim(self) -> None:
        with self._db_lock:
            conn = self._db()
            head = self._head(conn)
            if head % 5000 == 0 or head > 0 and conn.execute(
                    "SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1"
            ).fetchone()[0] < head - 2 * _LOG_KEEP:
                conn.execute("DELETE FROM knora_ret_log WHERE seq < ?", (head - _LOG_KEEP,))

    @staticmethod
    def _head(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq DESC LIMIT 1").fetchone()
        return int(row[0]) if row else 0


def _prepare(rows: Sequence[IndexRow]) -> _Prepared:
    """What the rows' write needs that is pure computation (done outside the write lock, stepping aside for
    chat turns on a large document: ``knora.pacing``)."""
    toks = [tok.tokenize(r.content) for r in sheltered(rows)]
    vectors: list[tuple[bytes | None, int]] = []
    for r in sheltered(rows):
        if r.embedding is None:
            vectors.append((None, 0))
            continue
        vec = np.asarray(r.embedding, dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        vec = vec / norm if norm > 0 else vec
        vectors.append((vec.tobytes(), int(vec.shape[0])))
    return toks, vectors
