"""In-memory vector sets for the embedded engine: exact numpy search, HNSW (usearch) above a size.

Why in memory: this machine's ``sqlite3`` cannot load sqlite-vec, and a float32 matrix scanned with one BLAS
matrix-vector product is exact and fast up to a few hundred thousand rows (measured in docs/retrieval.md). Above
``ann_min_rows`` an HNSW graph is built in a background thread; until it is ready, and whenever a filter is so
selective that the graph's candidates would not survive it, search stays exact. HNSW candidates are re-scored with
the float32 matrix, so returned scores are always exact cosines.
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

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
DOC, FAQ = 0, 1

_blas_lock = threading.Lock()
_blas: Any = None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run a matrix-vector product on one BLAS thread.

    A top-k scan is memory-bound, so extra OpenBLAS threads barely speed it up; but after each call they busy-wait
    for work, which on a small machine took ~50 ms of CPU per search away from the keyword query running in the
    thread beside it (and from every other request). The limit is scoped (and serialised, since it is process
    wide), so embedders and other numpy users keep their own thread settings."""
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


class VectorSet:
    """Vectors of one knowledge base at one dimension; slots are reused after compaction only."""

    def __init__(self, dim: int, *, ann_min_rows: int = 200_000, recall_target: float = 0.95) -> None:
        self.dim = dim
        self.ann_min_rows = ann_min_rows
        self.recall_target = recall_target
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
        self._codes: dict[str, int] = {}
        self._ann: Any = None
        self._ann_building = False
        self.ann_recall: float | None = None
        self.ann_expansion: int = 64

    # --- maintenance -------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot)

    def _code(self, s: str | None) -> int:
        if s is None or s == "":
            return -1
        c = self._codes.get(s)
        if c is None:
            c = len(self._codes)
            self._codes[s] = c
        return c

    def _grow(self, need: int) -> None:
        cap = self._m.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        self._m = np.resize(self._m, (new, self.dim))
        for name in ("_alive", "_enabled", "_recommended", "_faq", "_kcode", "_tcode", "_rowid"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype) if name not in ("_kcode", "_tcode") else np.full(new, -1, np.int32)
            arr[: old.shape[0]] = old
            setattr(self, name, arr)
        self._alive[cap:] = False

    def upsert(self, rowids: list[int], vecs: F32, metas: list[RowMeta]) -> None:
        with self.lock:
            self._grow(self._n + len(rowids))
            new_slots: list[int] = []
            for rid, vec, meta in zip(rowids, vecs, metas, strict=True):
                slot = self._slot.get(rid)
                if slot is None:
                    slot = self._n
                    self._n += 1
                    self._slot[rid] = slot
                    new_slots.append(slot)
                elif self._ann is not None:
                    new_slots.append(slot)
                    self._ann_remove(slot)
                self._m[slot] = vec
                self._alive[slot] = True
                self._enabled[slot] = meta.is_enabled
                self._recommended[slot] = meta.is_recommended
                self._faq[slot] = meta.knowledge_type == "faq"
                self._kcode[slot] = self._code(meta.knowledge_id)
                self._tcode[slot] = self._code(meta.tag_id)
                self._rowid[slot] = rid
            if self._ann is not None and new_slots:
                idx = np.asarray(new_slots, dtype=np.uint64)
                self._ann.add(idx, self._m[idx.astype(np.int64)])

    def remove(self, rowids: list[int]) -> None:
        with self.lock:
            for rid in rowids:
                slot = self._slot.pop(rid, None)
                if slot is not None:
                    self._alive[slot] = False
                    self._ann_remove(slot)
            if self._n > 4096 and len(self._slot) < self._n // 2:
                self._compact()

    def _ann_remove(self, slot: int) -> None:
        if self._ann is not None:
            with contextlib.suppress(Exception):  # a key the graph never had is fine
                self._ann.remove(slot)

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._n])
        for name in ("_m", "_alive", "_enabled", "_recommended", "_faq", "_kcode", "_tcode", "_rowid"):
            arr = getattr(self, name)
            arr[: keep.size] = arr[keep]
        self._alive[keep.size :] = False
        self._n = int(keep.size)
        self._slot = {int(r): i for i, r in enumerate(self._rowid[: self._n])}
        self._ann = None  # slot ids changed; rebuilt on demand
        self.ann_recall = None

    # --- search ------------------------------------------------------------------------------------------------
    def _mask(self, flt: Filter) -> npt.NDArray[np.bool_]:
        n = self._n
        mask = self._alive[:n] & self._enabled[:n]
        mask &= self._faq[:n] if flt.knowledge_type == "faq" else ~self._faq[:n]
        if flt.only_recommended:
            mask &= self._recommended[:n]
        if flt.knowledge_ids:
            codes = [self._codes[k] for k in flt.knowledge_ids if k in self._codes]
            mask &= np.isin(self._kcode[:n], np.asarray(codes, dtype=np.int32))
        if flt.tag_ids:
            codes = [self._codes[t] for t in flt.tag_ids if t in self._codes]
            mask &= np.isin(self._tcode[:n], np.asarray(codes, dtype=np.int32))
        return mask

    def search(self, q: F32, top_k: int, threshold: float, flt: Filter) -> list[tuple[int, float]]:
        """(rowid, cosine) best first, at most ``top_k``, cosine >= threshold."""
        with self.lock:
            n = self._n
            if n == 0 or top_k <= 0:
                return []
            selective = bool(flt.knowledge_ids or flt.tag_ids)
            if self._ann is None and len(self._slot) >= self.ann_min_rows and not self._ann_building:
                self._start_ann_build()
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

    def _search_ann(self, q: F32, top_k: int, threshold: float, flt: Filter) -> list[tuple[int, float]] | None:
        want = max(top_k * 4, 100)
        res = self._ann.search(q, want)
        keys = np.asarray(res.keys, dtype=np.int64)
        keys = keys[keys < self._n]
        mask = self._mask(flt)
        keys = keys[mask[keys]]
        if keys.size < min(top_k, int(mask.sum())):
            return None  # the filter ate the candidates: exact search instead
        scores = self._m[keys] @ q
        return self._top(scores, keys, top_k, threshold)

    # --- HNSW ----------------------------------------------------------------------------------------------------
    def _start_ann_build(self) -> None:
        try:
            import usearch.index  # noqa: F401
        except ImportError:
            return
        self._ann_building = True
        threading.Thread(target=self._build_ann, name="knora-hnsw", daemon=True).start()

    def build_ann_now(self) -> None:
        """Build the HNSW index synchronously (benchmarks, warm-up)."""
        self._ann_building = True
        self._build_ann()

    def _build_ann(self) -> None:
        from usearch.index import Index

        try:
            with self.lock:
                n = self._n
                keys = np.flatnonzero(self._alive[:n]).astype(np.uint64)
                data = self._m[keys.astype(np.int64)].copy()
            index = Index(ndim=self.dim, metric="cos", dtype="f16", connectivity=16, expansion_add=128,
                          expansion_search=self.ann_expansion)
            index.add(keys, data, threads=0)
            recall = self._tune(index, data, keys.astype(np.int64))
            with self.lock:
                if self._n >= n:  # apply rows added during the build
                    late = np.flatnonzero(self._alive[n : self._n]) + n
                    if late.size:
                        index.add(late.astype(np.uint64), self._m[late])
                self._ann = index
                self.ann_recall = recall
            log.info("HNSW index over %d vectors ready (recall@10 %.3f, ef %d)", keys.size, recall,
                     index.expansion_search)
        except Exception:
            log.exception("HNSW build failed; staying with exact search")
        finally:
            self._ann_building = False

    def _tune(self, index: Any, data: F32, keys: npt.NDArray[np.int64], samples: int = 50, k: int = 10) -> float:
        """Raise ``expansion_search`` until recall@10 against exact search reaches the target (the recall check)."""
        rng = np.random.default_rng(0)
        pick = rng.choice(data.shape[0], size=min(samples, data.shape[0]), replace=False)
        queries = data[pick] + rng.normal(0, 0.05, size=(pick.size, data.shape[1])).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        truth = [set(keys[np.argpartition(-(data @ qv), k)[:k]].tolist()) for qv in queries]
        ef = self.ann_expansion
        while True:
            index.expansion_search = ef
            got = sum(len(t & set(np.asarray(index.search(qv, k).keys).tolist())) for qv, t in zip(queries, truth,
                                                                                                 strict=True))
            recall = got / (k * len(truth))
            if recall >= self.recall_target or ef >= 1024:
                break
            ef *= 2
        self.ann_expansion = ef
        return recall
