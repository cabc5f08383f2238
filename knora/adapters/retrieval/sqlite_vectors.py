"""Vector search of the embedded engine: per (knowledge base, dimension) an in-memory :class:`VectorSet`,
loaded from the rows' float32 blobs on first use and kept current by replaying the change log before each
search."""

from __future__ import annotations

from typing import Any

import numpy as np

from knora.adapters.retrieval.hnsw_file import FileGraphStore, file_for
from knora.adapters.retrieval.sqlite_store import _COLS, _DELETE, _UPSERT, SqliteStore
from knora.adapters.retrieval.vectors import Filter, RowMeta, VectorSet
from knora.domain.search import EngineHit, MatchType
from knora.ports.retrieval import EngineQuery

_LOAD_BATCH = 20_000  # rows per fetch when loading a vector set


class VectorSearch(SqliteStore):
    """Mixin of the engine: vector sets and cosine search."""

    # --- vector sets ----------------------------------------------------------------------------------------
    @staticmethod
    def _meta(row: Any) -> RowMeta:
        return RowMeta(knowledge_id=row[2], tag_id=row[3], is_enabled=bool(row[4]),
                       is_recommended=bool(row[5]),
                       knowledge_type=row[6])

    def _store(self, kb_id: str, dim: int) -> FileGraphStore | None:
        if self._index_dir is None:
            return None

        def changed(after: int, upto: int) -> set[int] | None:
            if upto <= after:
                return set()
            with self._vec_lock:
                conn = self._vec_db()
                first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
                if first is None or first[0] > after + 1:
                    return None  # trimmed: the entries after ``after`` are gone
                if upto > self._head(conn):
                    # a sequence this database never reached (say, a file newer than a restored backup)
                    return None
                rows = conn.execute("SELECT row_id FROM knora_ret_log"
                                    " WHERE kb_id = ? AND seq > ? AND seq <= ?",
                                    (kb_id, after, upto)).fetchall()
            return {r[0] for r in rows}

        expect = {"db_id": self._db_id, "kb_id": kb_id, "dim": dim, "metric": "cos", "dtype": self._ann_dtype}
        return FileGraphStore(file_for(self._index_dir, self._db_id, kb_id, dim), expect, changed)

    def _load_set(self, kb_id: str, dim: int) -> VectorSet:
        vs = VectorSet(dim, ann_min_rows=self._ann_min_rows, ann_dtype=self._ann_dtype,
                       store=self._store(kb_id, dim))
        with self._vec_lock:
            conn = self._vec_db()
            conn.execute("BEGIN")
            try:
                vs.seq = self._head(conn)
                total = conn.execute("SELECT count(*) FROM knora_ret_rows WHERE kb_id = ? AND dim = ?",
                                     (kb_id, dim)).fetchone()[0]
                vs.reserve(int(total))
                cur = conn.execute(f"SELECT {_COLS} FROM knora_ret_rows WHERE kb_id = ? AND dim = ?",
                                   (kb_id, dim))
                while rows := cur.fetchmany(_LOAD_BATCH):  # in batches: no second copy of every blob at once
                    mat = np.frombuffer(b"".join(r[8] for r in rows),
                                        dtype=np.float32).reshape(len(rows), dim)
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
            with self._vec_lock:
                conn = self._vec_db()
                first = conn.execute("SELECT seq FROM knora_ret_log ORDER BY seq LIMIT 1").fetchone()
                if first is None or first[0] > vs.seq + 1:
                    trimmed = True
                    log: list[Any] = []
                else:
                    trimmed = False
                    log = conn.execute("SELECT row_id, op FROM knora_ret_log"
                                       " WHERE kb_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
                                       (kb_id, vs.seq, head)).fetchall()
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
                with self._vec_lock:
                    rows = self._vec_db().execute(
                        f"SELECT {_COLS} FROM knora_ret_rows WHERE id IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                # gone, or no longer a vector of this dimension (re-embedded under a reused row id)
                rows = [r for r in rows if r[7] == dim and r[8] is not None]
                present = {r[0] for r in rows}
                vs.remove([r for r in part if r not in present])
                if rows:
                    mat = np.frombuffer(b"".join(r[8] for r in rows),
                                        dtype=np.float32).reshape(len(rows), dim)
                    vs.upsert([r[0] for r in rows], mat, [self._meta(r) for r in rows])
            vs.seq = head
        return vs

    def _vector(self, query: EngineQuery) -> list[EngineHit]:
        q = np.asarray(query.embedding, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return []
        q = q / norm
        dim = int(q.shape[0])
        with self._vec_lock:
            head = self._head(self._vec_db())
        flt = Filter(knowledge_ids=query.knowledge_ids, tag_ids=query.tag_ids,
                     knowledge_type=query.knowledge_type,
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
        with self._vec_lock:
            rows = self._vec_db().execute(
                "SELECT id, chunk_id, source_id, content FROM knora_ret_rows"
                f" WHERE id IN ({','.join('?' * len(ids))})",
                ids).fetchall()
        by_id = {r[0]: r for r in rows}
        return [EngineHit(chunk_id=by_id[rid][1], source_id=by_id[rid][2], score=score, match_type=match_type,
                          content=by_id[rid][3]) for rid, score in found if rid in by_id]
