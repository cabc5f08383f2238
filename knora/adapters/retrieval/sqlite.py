"""The embedded engine ("sqlite"): FTS5 BM25 over pre-tokenised text plus in-memory vector sets.

Rows live in the metadata store's own SQLite file (one file to back up), in tables this engine creates. Vectors are
float32 blobs there and are loaded per knowledge base into a :class:`VectorSet` on first use. Another process (the
CLI ingesting while the server runs) may write the same file, so every write also appends to a change log; before
a search the engine reads the log's last sequence number (one indexed lookup) and replays only what it missed.

Keyword search: FTS5 is the durable truth; an in-memory :class:`KeywordIndex` (postings.py) computes the same BM25
top-k exactly and much faster. Each row's token ids are stored too (``knora_ret_kw``, ids from the
``knora_ret_terms`` dictionary) so the index loads without re-tokenising; it follows the change log like the vector
sets do. Until it is loaded (in a background thread above ``kw_sync_rows`` rows) FTS5 answers, with the term
pruning below.

Scores: vector = cosine in [-1, 1]; keyword = FTS5 BM25 ``s`` divided by ``Σ idf(t)`` over the query's distinct
terms, capped at 1. ``Σ idf`` is what a row of average length containing every query term once scores, so the
normalised value reads as "how much of the query's information this row covers" (terms absent from the corpus
count too): monotonic in BM25 for a given
query, comparable across queries and corpus sizes, and a keyword threshold of 0.3 means "about a third of the
query's weighted terms matched" (idf as FTS5 computes it, from the fts5vocab table).
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from knora.adapters.retrieval import postings
from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.hnsw_file import FileGraphStore, file_for
from knora.adapters.retrieval.postings import KeywordFilter, KeywordIndex
from knora.adapters.retrieval.vectors import Filter, RowMeta, VectorSet
from knora.domain.search import EngineHit, IndexRow, MatchType
from knora.ports.retrieval import Capability, EngineQuery
from knora.settings import Settings

log = logging.getLogger(__name__)

# FTS5 fallback only (while the in-memory index loads, or with keyword_index=False): lossy pruning of very common
# query terms in large corpora. The KeywordIndex path is exact and does not prune.
PRUNE_MIN_ROWS = 20_000
PRUNE_DF = 0.05
_LOG_KEEP = 200_000  # change-log entries kept; a reader further behind reloads its sets
_LOAD_BATCH = 20_000  # rows per fetch when loading a vector set

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
_UPSERT, _DELETE = 1, 2
# What the keyword index reads per row (postings.Row): filter columns and the token-id blob (NULL: not yet written)
_KW_COLS = ("r.id, r.kb_id, r.knowledge_id, r.tag_id, r.is_enabled, r.is_recommended, r.knowledge_type, k.kw"
            " FROM knora_ret_rows r LEFT JOIN knora_ret_kw k ON k.id = r.id")
_COLS = "id, chunk_id, knowledge_id, tag_id, is_enabled, is_recommended, knowledge_type, dim, embedding"


def sqlite_path(url: str) -> Path:
    """The file behind a ``sqlite(+aiosqlite)://`` URL."""
    _, _, rest = url.partition(":///")
    if not rest or rest.startswith(":memory:"):
        raise ValueError(f"the sqlite retrieval engine needs a database file, got {url!r}")
    return Path(rest.split("?", 1)[0])


class SqliteEngine:
    """Keyword (FTS5) and vector (numpy / HNSW) search in the metadata store's SQLite file."""

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
        # Keyword queries run on a second, read-only connection so that a long BM25 scan does not hold the lock the
        # concurrent vector query of the same search needs (WAL: readers see every committed write).
        self._kw_conn: sqlite3.Connection | None = None
        self._kw_lock = threading.Lock()
        self._df: tuple[int, dict[str, int]] = (-1, {})  # (log head, term -> rows containing it)
        # In-memory BM25 postings (exact FTS5 scores); None until loaded. Up to kw_sync_rows rows the first keyword
        # query loads it in line, above that a background thread does while FTS5 answers.
        self._kw_enabled = keyword_index
        self._kw_sync_rows = kw_sync_rows
        self._kw_index: KeywordIndex | None = None
        self._kw_building = False
        self._kw_state = threading.Lock()
        self._kw_load_s: float | None = None
        self._kw_terms: dict[str, int] = {}  # reader side: term -> id (ids never change once committed)
        self._w_terms: dict[str, int] = {}  # writer side, same; cleared when a write rolls back

    @property
    def name(self) -> str:
        return "sqlite"

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({"vector", "keyword"})

    # --- lifecycle ---------------------------------------------------------------------------------------------
    async def start(self) -> None:
        await asyncio.to_thread(self._open)

    def _open(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self._path, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        # A random id for this database, so that a saved graph is never applied to another database's rows.
        conn.execute("INSERT OR IGNORE INTO knora_ret_meta(key, value) VALUES ('db_id', ?)", (uuid.uuid4().hex,))
        self._db_id = conn.execute("SELECT value FROM knora_ret_meta WHERE key = 'db_id'").fetchone()[0]
        self._conn = conn
        kw = sqlite3.connect(self._path, timeout=30, check_same_thread=False, isolation_level=None)
        kw.execute("PRAGMA busy_timeout=30000")
        kw.execute("PRAGMA query_only=1")
        self._kw_conn = kw

    async def close(self) -> None:
        with self._sets_lock:
            sets = list(self._sets.values())
        for vs in sets:  # leave each graph file exact at the set's sequence (saves only what changed)
            await asyncio.to_thread(vs.close)
        if self._kw_conn is not None:
            kw, self._kw_conn = self._kw_conn, None
            await asyncio.to_thread(kw.close)
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)
        self._sets.clear()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("SqliteEngine is not started")
        return self._conn

    def _kw_db(self) -> sqlite3.Connection:
        if self._kw_conn is None:
            raise RuntimeError("SqliteEngine is not started")
        return self._kw_conn

    # --- writes ------------------------------------------------------------------------------------------------
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
        gone = conn.execute(f"DELETE FROM knora_ret_rows WHERE {where} RETURNING id, kb_id", params).fetchall()
        if gone:
            conn.executemany("DELETE FROM knora_ret_fts WHERE rowid = ?", [(r[0],) for r in gone])
            conn.executemany("DELETE FROM knora_ret_kw WHERE id = ?", [(r[0],) for r in gone])
            conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)",
                             [(r[1], r[0], _DELETE) for r in gone])

    def _index(self, conn: sqlite3.Connection, rows: Sequence[IndexRow]) -> None:
        ids = [r.source_id for r in rows]
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            self._delete_where(conn, f"source_id IN ({','.join('?' * len(part))})", part)
        # Row ids are assigned here (the write lock is held), so all three tables load with executemany.
        top = conn.execute("SELECT max(id) FROM knora_ret_rows").fetchone()[0] or 0
        data, fts, kw, log = [], [], [], []
        toks = [tok.tokenize(r.content) for r in rows]
        blobs = postings.encode_rows(toks, self._term_ids(conn, toks))
        for n, r, tt, blob in zip(range(top + 1, top + 1 + len(rows)), rows, toks, blobs, strict=True):
            emb = None
            dim = 0
            if r.embedding is not None:
                vec = np.asarray(r.embedding, dtype=np.float32)
                norm = float(np.linalg.norm(vec))
                vec = vec / norm if norm > 0 else vec
                emb, dim = vec.tobytes(), int(vec.shape[0])
            data.append((n, r.source_id, r.chunk_id, r.knowledge_id, r.knowledge_base_id, r.tenant_id,
                         r.tag_id or None, int(r.is_enabled), int(r.is_recommended), r.knowledge_type, r.content,
                         dim, emb))
            fts.append((n, " ".join(tt)))
            kw.append((n, blob))
            log.append((r.knowledge_base_id, n, _UPSERT))
        conn.executemany(
            "INSERT INTO knora_ret_rows(id, source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id, is_enabled,"
            " is_recommended, knowledge_type, content, dim, embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", data)
        conn.executemany("INSERT INTO knora_ret_fts(rowid, tokens) VALUES (?, ?)", fts)
        conn.executemany("INSERT INTO knora_ret_kw(id, kw) VALUES (?, ?)", kw)
        conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)", log)

    def _term_ids(self, conn: sqlite3.Connection, toks: Sequence[Sequence[str]]) -> dict[str, int]:
        """Ids of every token in ``toks`` from the term dictionary, adding new terms (write lock held, so ids are
        assigned in commit order and never clash with another writer's)."""
        cache = self._w_terms
        if len(cache) > 2_000_000:
            cache.clear()
        missing = set(chain.from_iterable(toks)).difference(cache)
        if not missing:
            return cache
        want = list(missing)
        for i in range(0, len(want), 500):
            part = want[i : i + 500]
            cache.update(conn.execute(f"SELECT term, id FROM knora_ret_terms WHERE term IN ({','.join('?' * len(part))})",
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
            await asyncio.to_thread(self._write, self._index, list(rows))

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        await self._delete_in("chunk_id", chunk_ids)

    async def delete_knowledge(self, knowledge_ids: Sequence[str]) -> None:
        await self._delete_in("knowledge_id", knowledge_ids)

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        await self._delete_in("kb_id", [knowledge_base_id])
        await asyncio.to_thread(self._drop_graphs, knowledge_base_id)

    def _drop_graphs(self, kb_id: str) -> None:
        """A deleted KB's vector sets stop their background work and their saved graph files leave the disk."""
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
                    f"UPDATE knora_ret_rows SET is_enabled = ? WHERE chunk_id IN ({','.join('?' * len(part))})"
                    " RETURNING id, kb_id", [int(enabled), *part]).fetchall()
                conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)",
                                 [(r[1], r[0], _UPSERT) for r in changed])

        await asyncio.to_thread(self._write, run)

    def _maybe_trim(self) -> None:
        with self._db_lock:
            conn = self._db()
            head = self._head(conn)
            if head % 5000 == 0 or head > 0 and conn.execute(
                    "SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()[0] < head - 2 * _LOG_KEEP:
                conn.execute("DELETE FROM knora_ret_log WHERE seq < ?", (head - _LOG_KEEP,))

    @staticmethod
    def _head(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq DESC LIMIT 1").fetchone()
        return int(row[0]) if row else 0

    # --- vector sets -------------------------------------------------------------------------------------------
    @staticmethod
    def _meta(row: Any) -> RowMeta:
        return RowMeta(knowledge_id=row[2], tag_id=row[3], is_enabled=bool(row[4]), is_recommended=bool(row[5]),
                       knowledge_type=row[6])

    def _store(self, kb_id: str, dim: int) -> FileGraphStore | None:
        if self._index_dir is None:
            return None

        def changed(after: int, upto: int) -> set[int] | None:
            if upto <= after:
                return set()
            with self._db_lock:
                conn = self._db()
                first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
                if first is None or first[0] > after + 1:
                    return None  # trimmed: the entries after ``after`` are gone
                if upto > self._head(conn):
                    return None  # a sequence this database never reached (say, a file newer than a restored backup)
                rows = conn.execute("SELECT row_id FROM knora_ret_log WHERE kb_id = ? AND seq > ? AND seq <= ?",
                                    (kb_id, after, upto)).fetchall()
            return {r[0] for r in rows}

        expect = {"db_id": self._db_id, "kb_id": kb_id, "dim": dim, "metric": "cos", "dtype": self._ann_dtype}
        return FileGraphStore(file_for(self._index_dir, self._db_id, kb_id, dim), expect, changed)

    def _load_set(self, kb_id: str, dim: int) -> VectorSet:
        vs = VectorSet(dim, ann_min_rows=self._ann_min_rows, ann_dtype=self._ann_dtype,
                       store=self._store(kb_id, dim))
        with self._db_lock:
            conn = self._db()
            conn.execute("BEGIN")
            try:
                vs.seq = self._head(conn)
                total = conn.execute("SELECT count(*) FROM knora_ret_rows WHERE kb_id = ? AND dim = ?",
                                     (kb_id, dim)).fetchone()[0]
                vs.reserve(int(total))
                cur = conn.execute(f"SELECT {_COLS} FROM knora_ret_rows WHERE kb_id = ? AND dim = ?", (kb_id, dim))
                while rows := cur.fetchmany(_LOAD_BATCH):  # in batches: no second copy of every blob at once
                    mat = np.frombuffer(b"".join(r[8] for r in rows), dtype=np.float32).reshape(len(rows), dim)
                    vs.upsert([r[0] for r in rows], mat, [self._meta(r) for r in rows])
            finally:
                conn.execute("COMMIT")
        if len(vs) >= self._ann_min_rows:
            vs.start_ann()  # restore the saved graph (or build one) in the background; exact search meanwhile
        return vs

    def _refresh(self, kb_id: str, dim: int, head: int) -> VectorSet:
        key = (kb_id, dim)
        with self._sets_lock:
            vs = self._sets.get(key)
        if vs is None:
            vs = self._load_set(kb_id, dim)
            with self._sets_lock:
                self._sets[key] = vs
            return vs
        if vs.seq >= head:
            return vs
        with vs.lock:
            if vs.seq >= head:
                return vs
            with self._db_lock:
                conn = self._db()
                first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
                if first is None or first[0] > vs.seq + 1:
                    trimmed = True
                    log: list[Any] = []
                else:
                    trimmed = False
                    log = conn.execute("SELECT row_id, op FROM knora_ret_log WHERE kb_id = ? AND seq > ? AND seq <= ?"
                                       " ORDER BY seq", (kb_id, vs.seq, head)).fetchall()
            if trimmed:
                fresh = self._load_set(kb_id, dim)
                with self._sets_lock:
                    self._sets[key] = fresh
                vs.close(save=False, wait=False)  # its job (if any) stops at its next step
                return fresh
            last: dict[int, int] = {}
            for rid, op in log:
                last[rid] = op
            deleted = [r for r, op in last.items() if op == _DELETE]
            upserted = [r for r, op in last.items() if op == _UPSERT]
            if deleted:
                vs.remove(deleted)
            for i in range(0, len(upserted), 500):
                part = upserted[i : i + 500]
                with self._db_lock:
                    rows = self._db().execute(
                        f"SELECT {_COLS} FROM knora_ret_rows WHERE id IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                # gone, or no longer a vector of this dimension (re-embedded under a reused row id)
                rows = [r for r in rows if r[7] == dim and r[8] is not None]
                present = {r[0] for r in rows}
                vs.remove([r for r in part if r not in present])
                if rows:
                    mat = np.frombuffer(b"".join(r[8] for r in rows), dtype=np.float32).reshape(len(rows), dim)
                    vs.upsert([r[0] for r in rows], mat, [self._meta(r) for r in rows])
            vs.seq = head
        return vs

    # --- search ------------------------------------------------------------------------------------------------
    async def search(self, query: EngineQuery) -> list[EngineHit]:
        if query.top_k <= 0 or not query.knowledge_base_ids:
            return []
        if query.mode == "keyword":
            return await asyncio.to_thread(self._keyword, query)
        if query.embedding is None:
            return []
        return await asyncio.to_thread(self._vector, query)

    def _vector(self, query: EngineQuery) -> list[EngineHit]:
        q = np.asarray(query.embedding, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return []
        q = q / norm
        dim = int(q.shape[0])
        with self._db_lock:
            head = self._head(self._db())
        flt = Filter(knowledge_ids=query.knowledge_ids, tag_ids=query.tag_ids, knowledge_type=query.knowledge_type,
                     only_recommended=query.only_recommended)
        found: list[tuple[int, float]] = []
        for kb_id in dict.fromkeys(query.knowledge_base_ids):
            vs = self._refresh(kb_id, dim, head)
            found.extend(vs.search(q, query.top_k, query.threshold, flt))
        found.sort(key=lambda x: -x[1])
        found = found[: query.top_k]
        return self._hits(found, MatchType.EMBEDDING)

    def _hits(self, found: list[tuple[int, float]], match_type: MatchType) -> list[EngineHit]:
        if not found:
            return []
        ids = [rid for rid, _ in found]
        with self._db_lock:
            rows = self._db().execute(
                f"SELECT id, chunk_id, source_id, content FROM knora_ret_rows WHERE id IN ({','.join('?' * len(ids))})",
                ids).fetchall()
        by_id = {r[0]: r for r in rows}
        return [EngineHit(chunk_id=by_id[rid][1], source_id=by_id[rid][2], score=score, match_type=match_type,
                          content=by_id[rid][3]) for rid, score in found if rid in by_id]

    def _idf_sum(self, conn: sqlite3.Connection, terms: list[str]) -> tuple[float, list[str]]:
        """Σ idf over the query terms, exactly as FTS5's bm25() computes idf (so the ratio is a coverage), and the
        terms worth matching: in a large corpus, terms in more than PRUNE_DF of the rows (low idf, huge posting
        lists) are left out of MATCH when rarer terms exist — they would make FTS5 score a third of the corpus for
        a few percent of the score. They still count in the normaliser."""
        head = self._head(conn)
        if self._count[0] != head:
            self._count = (head, int(conn.execute("SELECT count(*) FROM knora_ret_rows").fetchone()[0]))
        n_rows = self._count[1]
        # Document frequencies change only with a write, and every write moves the log head: cache them per head
        # (fts5vocab counts a term's rows by walking its posting list, ~6 ms per query at 100k rows).
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
        """Load the keyword index now, wait for it and bring it up to the change log's head (benchmarks, warm-up)."""
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
        """Load the index from the rows' token-id blobs at one snapshot (its own connection), then swap it in."""
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
                                 [(r[0], blob) for r, blob in zip(rows, postings.encode_rows(toks, ids), strict=True)
                                  if r[0] in present])

            self._write(run)

    def _kw_fetch(self, conn: sqlite3.Connection, ids: Sequence[int]) -> list[Any]:
        out: list[Any] = []
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            out.extend(conn.execute(f"SELECT {_KW_COLS} WHERE r.id IN ({','.join('?' * len(part))})",
                                    part).fetchall())
        return out

    def _kw_replay(self, idx: KeywordIndex, conn: sqlite3.Connection, head: int) -> bool:
        """Apply the change log since ``idx.seq`` (kw lock held). False when the log no longer reaches back that
        far: the index is dropped and reloaded in the background."""
        first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
        if first is None or first[0] > idx.seq + 1:
            self._kw_index = None
            self._kw_start_rebuild()
            return False
        last: dict[int, int] = {}
        for rid, op in conn.execute("SELECT row_id, op FROM knora_ret_log WHERE seq > ? AND seq <= ? ORDER BY seq",
                                    (idx.seq, head)):
            last[rid] = op
        idx.remove([r for r, op in last.items() if op == _DELETE])
        upserted = [r for r, op in last.items() if op == _UPSERT]
        rows = self._kw_fetch(conn, upserted)
        if any(r[7] is None for r in rows):  # written by an older version: backfill, read again
            self._kw_backfill()
            rows = self._kw_fetch(conn, upserted)
        present = {r[0] for r in rows}
        idx.remove([r for r in upserted if r not in present])
        idx.upsert([r for r in rows if r[7] is not None])
        idx.seq = head
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

    def _keyword_fast(self, idx: KeywordIndex, terms: list[str], query: EngineQuery) -> list[EngineHit] | None:
        flt = KeywordFilter(knowledge_base_ids=list(query.knowledge_base_ids), knowledge_ids=list(query.knowledge_ids),
                            tag_ids=list(query.tag_ids), knowledge_type=query.knowledge_type,
                            only_recommended=query.only_recommended)
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
        return [EngineHit(chunk_id=by_id[rid][1], source_id=by_id[rid][2], score=min(max(s, 0.0) / norm, 1.0),
                          match_type=MatchType.KEYWORDS, content=by_id[rid][3]) for rid, s in found if rid in by_id]

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
        return [EngineHit(chunk_id=c, source_id=s, score=min(max(score, 0.0) / norm, 1.0),
                          match_type=MatchType.KEYWORDS, content=content) for c, s, content, score in rows]


def build(settings: Settings) -> SqliteEngine:
    tok.configure(settings.data_dir / "cache")
    return SqliteEngine(sqlite_path(settings.effective_database_url), index_dir=settings.data_dir / "index")
