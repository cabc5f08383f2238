"""The embedded engine ("sqlite"): FTS5 BM25 over pre-tokenised text plus in-memory vector sets.

Rows live in the metadata store's own SQLite file (one file to back up), in tables this engine creates. Vectors are
float32 blobs there and are loaded per knowledge base into a :class:`VectorSet` on first use. Another process (the
CLI ingesting while the server runs) may write the same file, so every write also appends to a change log; before
a search the engine reads the log's last sequence number (one indexed lookup) and replays only what it missed.

Scores: vector = cosine in [-1, 1]; keyword = FTS5 BM25 ``s`` divided by ``Σ idf(t)`` over the query's distinct
terms, capped at 1. ``Σ idf`` is what a row of average length containing every query term once scores, so the
normalised value reads as "how much of the query's information this row covers" (terms absent from the corpus
count too): monotonic in BM25 for a given
query, comparable across queries and corpus sizes, and a keyword threshold of 0.3 means "about a third of the
query's weighted terms matched" (idf as FTS5 computes it, from the fts5vocab table).
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from knora.adapters.retrieval import tokenize as tok
from knora.adapters.retrieval.hnsw_file import FileGraphStore, file_for
from knora.adapters.retrieval.vectors import Filter, RowMeta, VectorSet
from knora.domain.search import EngineHit, IndexRow, MatchType
from knora.ports.retrieval import Capability, EngineQuery
from knora.settings import Settings

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
CREATE TABLE IF NOT EXISTS knora_ret_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_UPSERT, _DELETE = 1, 2
_COLS = "id, chunk_id, knowledge_id, tag_id, is_enabled, is_recommended, knowledge_type, dim, embedding"


def sqlite_path(url: str) -> Path:
    """The file behind a ``sqlite(+aiosqlite)://`` URL."""
    _, _, rest = url.partition(":///")
    if not rest or rest.startswith(":memory:"):
        raise ValueError(f"the sqlite retrieval engine needs a database file, got {url!r}")
    return Path(rest.split("?", 1)[0])


class SqliteEngine:
    """Keyword (FTS5) and vector (numpy / HNSW) search in the metadata store's SQLite file."""

    def __init__(self, path: Path, *, ann_min_rows: int = 200_000, index_dir: Path | None = None,
                 ann_dtype: str = "i8") -> None:
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
                raise
        self._maybe_trim()

    @staticmethod
    def _delete_where(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
        gone = conn.execute(f"DELETE FROM knora_ret_rows WHERE {where} RETURNING id, kb_id", params).fetchall()
        if gone:
            conn.executemany("DELETE FROM knora_ret_fts WHERE rowid = ?", [(r[0],) for r in gone])
            conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)",
                             [(r[1], r[0], _DELETE) for r in gone])

    def _index(self, conn: sqlite3.Connection, rows: Sequence[IndexRow]) -> None:
        ids = [r.source_id for r in rows]
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            self._delete_where(conn, f"source_id IN ({','.join('?' * len(part))})", part)
        # Row ids are assigned here (the write lock is held), so all three tables load with executemany.
        top = conn.execute("SELECT max(id) FROM knora_ret_rows").fetchone()[0] or 0
        data, fts, log = [], [], []
        for n, r in enumerate(rows, start=top + 1):
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
            fts.append((n, tok.index_text(r.content)))
            log.append((r.knowledge_base_id, n, _UPSERT))
        conn.executemany(
            "INSERT INTO knora_ret_rows(id, source_id, chunk_id, knowledge_id, kb_id, tenant_id, tag_id, is_enabled,"
            " is_recommended, knowledge_type, content, dim, embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", data)
        conn.executemany("INSERT INTO knora_ret_fts(rowid, tokens) VALUES (?, ?)", fts)
        conn.executemany("INSERT INTO knora_ret_log(kb_id, row_id, op) VALUES (?, ?, ?)", log)

    async def index(self, rows: Sequence[IndexRow]) -> None:
        if rows:
            await asyncio.to_thread(self._write, self._index, list(rows))

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        await self._delete_in("chunk_id", chunk_ids)

    async def delete_knowledge(self, knowledge_ids: Sequence[str]) -> None:
        await self._delete_in("knowledge_id", knowledge_ids)

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        await self._delete_in("kb_id", [knowledge_base_id])

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
