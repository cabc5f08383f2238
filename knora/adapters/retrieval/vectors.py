"""In-memory vector sets for the embedded engine: exact numpy search, HNSW (usearch) above a size.

Why in memory: this machine's ``sqlite3`` cannot load sqlite-vec, and a float32 matrix scanned with one BLAS
matrix-vector product is exact and fast up to a few hundred thousand rows (measured in docs/retrieval.md).
Above ``ann_min_rows`` an HNSW graph (int8-quantised by default) is restored from its saved file or built, in
a background thread; until it is ready, and whenever a filter is so selective that the graph's candidates
would not survive it, search stays exact. HNSW candidates are re-scored with the float32 matrix, so returned
scores are always exact cosines. Once there, the graph follows every upsert and delete, and is saved (through
a :class:`GraphStore`) after a build and after enough changes, tagged with the change-log sequence it
reflects.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from knora.adapters.retrieval.codes import Codes
from knora.adapters.retrieval.hnsw_file import GraphStore
from knora.adapters.retrieval.vectors_hnsw import HnswGraph

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
DOC, FAQ = 0, 1

_blas_lock = threading.Lock()
_blas: Any = None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run a matrix-vector product on one BLAS thread.

    A top-k scan is memory-bound, so extra OpenBLAS threads barely speed it up; but after each call they
    busy-wait for work, which on a small machine took ~50 ms of CPU per search away from the keyword query
    running in the thread beside it (and from every other request). The limit is scoped (and serialised, since
    it is process wide), so embedders and other numpy users keep their own thread settings."""
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController()
        except Exception:  # noqa: BLE001 - without threadpoolctl the product simply runs unlimited
            _blas = False
    if _blas is False:
        yield
        return
    with _blas_lock, _blas.limit(limits=1, user_api="blas"):
        yield


@dataclass
class RowMeta:
    knowledge_id: str
    tag_id: str | None
    is_enabled: bool
    is_recommended: bool
    knowledge_type: str


@dataclass
class Filter:
    knowledge_ids: list[str] = field(default_factory=list)
    tag_ids: list[str] = field(default_factory=list)
    knowledge_type: str = "document"
    only_recommended: bool = False


class VectorSet(HnswGraph):
    """Vectors of one knowledge base at one dimension; slots are reused after compaction only.

    The HNSW graph, once there, is keyed by row id (stable across restarts, unlike slots) and kept equal to
    the set: every upsert/remove is applied to it at once, except while a background job (build, restore,
    save) owns it — then the touched row ids wait in ``_pending``, are searched exactly beside the graph, and
    are applied when the job ends. ``seq`` is the change-log position the set reflects; the engine updates it
    under ``lock`` in the same critical section as the changes, so a save taken under the lock pairs a graph
    with the right sequence.
    """

    def __init__(self, dim: int, *, ann_min_rows: int = 200_000, recall_target: float = 0.95,
                 ann_dtype: str = "i8", store: GraphStore | None = None, save_every: int | None = None,
                 rebuild_share: float = 0.3, rebuild_min: int = 1000) -> None:
        self.dim = dim
        self.ann_min_rows = ann_min_rows
        self.recall_target = recall_target
        self.ann_dtype = ann_dtype
        self.store = store
        self.save_every = save_every  # graph changes between background saves (None: from the size)
        self.seq = 0  # change-log position this set reflects (maintained by the engine)
        self.lock = threading.RLock()
        cap = 1024
        self._m = np.zeros((cap, dim), dtype=np.float32)
        self._alive = np.zeros(cap, dtype=bool)
        self._enabled = np.zeros(cap, dtype=bool)
        self._recommended = np.zeros(cap, dtype=bool)
        self._faq = np.zeros(cap, dtype=bool)
        self._kcode = np.full(cap, -1, dtype=np.int32)
        self._tcode = np.full(cap, -1, dtype=np.int32)
        self._rowid = np.zeros(cap, dtype=np.int64)
        self._n = 0  # slots used
        self._slot: dict[int, int] = {}
        self._codes = Codes(empty_is_none=True)  # a knowledge or tag id of "" is no id
        self._ann: Any = None
        self._ann_busy = False  # a job owns the graph's write side (changes go to _pending)
        self._ann_gave_up = False
        self._pending: set[int] = set()
        self._job_seq = 0
        self._job: threading.Thread | None = None
        self._closed = False
        self._dirty = 0  # graph changes not in the saved file
        # usearch removals leave tombstones in the graph (memory, and hops that lead nowhere): once the
        # removals since the graph was built exceed rebuild_share of the rows (and rebuild_min), a fresh graph
        # is built in the background while the old one keeps serving (re-parsing documents replaces all their
        # rows).
        self.rebuild_share = rebuild_share
        self.rebuild_min = rebuild_min
        self._graph_removed = 0
        self.ann_recall: float | None = None
        self.ann_expansion: int = 64
        self.ann_source: str | None = None  # "restored" or "built"
        self.ann_stats: dict[str, float] = {}  # seconds per phase of the last job, rows replayed

    # --- maintenance ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot)

    def reserve(self, rows: int) -> None:
        """Size the arrays for ``rows`` more rows at once (a bulk load then copies nothing)."""
        with self.lock:
            self._grow(self._n + rows, exact=True)

    def _grow(self, need: int, exact: bool = False) -> None:
        cap = self._m.shape[0]
        if need <= cap:
            return
        new = need if exact else max(need, cap * 2)
        m = np.zeros((new, self.dim), dtype=np.float32)
        m[:cap] = self._m
        self._m = m
        for name in ("_alive", "_enabled", "_recommended", "_faq", "_kcode", "_tcode", "_rowid"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype) if name not in ("_kcode", "_tcode") else np.full(new, -1,
                                                                                                  np.int32)
            arr[: old.shape[0]] = old
            setattr(self, name, arr)
        self._alive[cap:] = False

    def upsert(self, rowids: list[int], vecs: F32, metas: list[RowMeta]) -> None:
        with self.lock:
            self._grow(self._n + len(rowids))
            if not any(r in self._slot for r in rowids) and len(set(rowids)) == len(rowids):
                self._append(rowids, vecs, metas)  # all new (a load): column-wise
                self._graph_changed(rowids)
                return
            moved: list[int] = []  # rows whose vector the graph must take (not a flag-only change)
            for rid, vec, meta in zip(rowids, vecs, metas, strict=True):
                slot = self._slot.get(rid)
                if slot is None:
                    slot = self._n
                    self._n += 1
                    self._slot[rid] = slot
                    moved.append(rid)
                elif not np.array_equal(self._m[slot], vec):
                    moved.append(rid)
                self._m[slot] = vec
                self._alive[slot] = True
                self._enabled[slot] = meta.is_enabled
                self._recommended[slot] = meta.is_recommended
                self._faq[slot] = meta.knowledge_type == "faq"
                self._kcode[slot] = self._codes.code(meta.knowledge_id)
                self._tcode[slot] = self._codes.code(meta.tag_id)
                self._rowid[slot] = rid
            self._graph_changed(moved)

    def _append(self, rowids: list[int], vecs: F32, metas: list[RowMeta]) -> None:
        lo, hi = self._n, self._n + len(rowids)
        self._m[lo:hi] = vecs
        self._alive[lo:hi] = True
        self._enabled[lo:hi] = [m.is_enabled for m in metas]
        self._recommended[lo:hi] = [m.is_recommended for m in metas]
        self._faq[lo:hi] = [m.knowledge_type == "faq" for m in metas]
        self._kcode[lo:hi] = [self._codes.code(m.knowledge_id) for m in metas]
        self._tcode[lo:hi] = [self._codes.code(m.tag_id) for m in metas]
        self._rowid[lo:hi] = rowids
        self._slot.update(zip(rowids, range(lo, hi), strict=True))
        self._n = hi

    def remove(self, rowids: list[int]) -> None:
        with self.lock:
            gone = []
            for rid in rowids:
                slot = self._slot.pop(rid, None)
                if slot is not None:
                    self._alive[slot] = False
                    gone.append(rid)
            self._graph_changed(gone)
            if self._n > 4096 and len(self._slot) < self._n // 2 and not self._ann_busy:
                self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._n])
        for name in ("_m", "_alive", "_enabled", "_recommended", "_faq", "_kcode", "_tcode", "_rowid"):
            arr = getattr(self, name)
            arr[: keep.size] = arr[keep]
        self._alive[keep.size :] = False
        self._n = int(keep.size)
        self._slot = {int(r): i for i, r in enumerate(self._rowid[: self._n])}  # the graph is keyed by row id

    # --- search ---------------------------------------------------------------------------------------------
    def _mask(self, flt: Filter, at: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.bool_]:
        sel: Any = slice(0, self._n) if at is None else at
        mask: npt.NDArray[np.bool_] = self._alive[sel] & self._enabled[sel]
        mask &= self._faq[sel] if flt.knowledge_type == "faq" else ~self._faq[sel]
        if flt.only_recommended:
            mask &= self._recommended[sel]
        if flt.knowledge_ids:
            codes = self._codes.known(flt.knowledge_ids)
            mask &= np.isin(self._kcode[sel], np.asarray(codes, dtype=np.int32))
        if flt.tag_ids:
            codes = self._codes.known(flt.tag_ids)
            mask &= np.isin(self._tcode[sel], np.asarray(codes, dtype=np.int32))
        return mask

    def search(self, q: F32, top_k: int, threshold: float, flt: Filter) -> list[tuple[int, float]]:
        """(rowid, cosine) best first, at most ``top_k``, cosine >= threshold."""
        with self.lock:
            n = self._n
            if n == 0 or top_k <= 0:
                return []
            selective = bool(flt.knowledge_ids or flt.tag_ids)
            if self._ann is None and len(self._slot) >= self.ann_min_rows:
                self.start_ann()
            if self._ann is not None and not selective:
                hits = self._search_ann(q, top_k, threshold, flt)
                if hits is not None:
                    return hits
            mask = self._mask(flt)
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                return []
            with single_threaded_blas():
                scores = self._m[:n] @ q if idx.size == n else self._m[idx] @ q
            return self._top(scores, idx if idx.size != n else None, top_k, threshold)

    def _top(self, scores: F32, idx: npt.NDArray[np.int64] | None, top_k: int,
             threshold: float) -> list[tuple[int, float]]:
        k = min(top_k, scores.shape[0])
        part = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
        part = part[np.argsort(-scores[part], kind="stable")]
        slots = idx[part] if idx is not None else part
        out: list[tuple[int, float]] = []
        for s, sc in zip(slots, scores[part], strict=True):
            if sc < threshold:
                break
            out.append((int(self._rowid[s]), float(sc)))
        return out

    def _search_ann(self, q: F32, top_k: int, threshold: float, flt: Filter) -> list[tuple[int,
                                                                                           float]] | None:
        slots = self._candidates(self._ann, q, top_k)
        slots = slots[self._mask(flt, slots)] if slots.size else slots
        if slots.size < top_k and slots.size < int(self._mask(flt).sum()):
            return None  # the filter ate the candidates: exact search instead
        if slots.size == 0:
            return []
        return self._top(self._m[slots] @ q, slots, top_k, threshold)

    # --- closing ------------------------------------------------------------------------------------------
    def save_now(self) -> bool:
        """Wait for running jobs, then save synchronously if the graph differs from its file (or vouch for the
        file at the current sequence if it does not). True if the file is now exact at ``seq``."""
        if self.store is None:
            return False
        self.wait_ann()
        with self.lock:
            if self._ann is None or self._ann_busy:
                return False
            if self._dirty == 0:
                self.store.vouch(self.seq)
                return True
            self._begin_job()
        self._save_job()
        return True

    def close(self, save: bool = True, wait: bool = True) -> None:
        """Stop background work; with ``save``, leave the file exact at the current sequence when cheap."""
        if save and self._ann is not None:  # a build in progress is abandoned, not awaited
            try:
                self.save_now()
            except Exception:
                log.exception("saving the HNSW graph at close failed")
        with self.lock:
            self._closed = True
        if wait:
            self.wait_ann(timeout=5)
