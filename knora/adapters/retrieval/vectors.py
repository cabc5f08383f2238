"""In-memory vector sets for the embedded engine: exact numpy search, HNSW (usearch) above a size.

Why in memory: this machine's ``sqlite3`` cannot load sqlite-vec, and a float32 matrix scanned with one BLAS
matrix-vector product is exact and fast up to a few hundred thousand rows (measured in docs/retrieval.md). Above
``ann_min_rows`` an HNSW graph (int8-quantised by default) is restored from its saved file or built, in a
background thread; until it is ready, and whenever a filter is so selective that the graph's candidates would not
survive it, search stays exact. HNSW candidates are re-scored with the float32 matrix, so returned scores are
always exact cosines. Once there, the graph follows every upsert and delete, and is saved (through a
:class:`GraphStore`) after a build and after enough changes, tagged with the change-log sequence it reflects.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from knora.adapters.retrieval.codes import Codes

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


class GraphStore(Protocol):
    """Persistence of one set's HNSW graph (implemented by :class:`hnsw_file.FileGraphStore`)."""

    def load(self) -> tuple[Any, Any, int] | None: ...  # (index, meta with .seq/.expansion_search/.recall, valid seq)

    def save(self, index: Any, *, seq: int, expansion_search: int, recall: float | None) -> Any: ...

    def changed(self, after: int, upto: int) -> set[int] | None: ...

    def vouch(self, seq: int) -> None: ...


class VectorSet:
    """Vectors of one knowledge base at one dimension; slots are reused after compaction only.

    The HNSW graph, once there, is keyed by row id (stable across restarts, unlike slots) and kept equal to the
    set: every upsert/remove is applied to it at once, except while a background job (build, restore, save) owns
    it — then the touched row ids wait in ``_pending``, are searched exactly beside the graph, and are applied when
    the job ends. ``seq`` is the change-log position the set reflects; the engine updates it under ``lock`` in the
    same critical section as the changes, so a save taken under the lock pairs a graph with the right sequence.
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
        # usearch removals leave tombstones in the graph (memory, and hops that lead nowhere): once the removals since
        # the graph was built exceed rebuild_share of the rows (and rebuild_min), a fresh graph is built in the
        # background while the old one keeps serving (re-parsing documents replaces all their rows).
        self.rebuild_share = rebuild_share
        self.rebuild_min = rebuild_min
        self._graph_removed = 0
        self.ann_recall: float | None = None
        self.ann_expansion: int = 64
        self.ann_source: str | None = None  # "restored" or "built"
        self.ann_stats: dict[str, float] = {}  # seconds per phase of the last job, rows replayed

    # --- maintenance -------------------------------------------------------------------------------------------
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
            arr = np.zeros(new, dtype=old.dtype) if name not in ("_kcode", "_tcode") else np.full(new, -1, np.int32)
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

    def _graph_changed(self, rowids: list[int]) -> None:
        """Bring the graph's entries for ``rowids`` in line with the set (lock held)."""
        if not rowids:
            return
        if self._ann_busy:
            self._pending.update(rowids)
        elif self._ann is not None:
            self._apply(self._ann, *self._snapshot(rowids))
            if not self._maybe_rebuild():
                self._maybe_save()

    def _maybe_rebuild(self) -> bool:
        """Start a background rebuild when tombstones have piled up (lock held); True if one started."""
        if (self._ann is None or self._ann_busy or self._closed
                or self._graph_removed <= max(self.rebuild_min, self.rebuild_share * len(self._slot))):
            return False
        log.info("rebuilding an HNSW graph after %d removals (%d rows)", self._graph_removed, len(self._slot))
        self._begin_job()
        self._job = threading.Thread(target=self._ann_job, kwargs={"restore": False}, name="knora-hnsw", daemon=True)
        self._job.start()
        return True

    def _snapshot(self, rowids: list[int]) -> tuple[list[int], list[int], F32]:
        """(all ids, ids still present, their vectors) — taken under the lock, applied with or without it."""
        rowids = list(dict.fromkeys(rowids))
        alive = [r for r in rowids if r in self._slot]
        vecs = self._m[np.asarray([self._slot[r] for r in alive], dtype=np.int64)] if alive else \
            np.zeros((0, self.dim), np.float32)
        return rowids, alive, vecs

    def _apply(self, index: Any, rowids: list[int], alive: list[int], vecs: F32) -> None:
        keys = np.asarray(rowids, dtype=np.uint64)
        present = np.atleast_1d(np.asarray(index.contains(keys), dtype=bool))
        if present.any():
            index.remove(keys[present])
            self._graph_removed += int(present.sum())
        if alive:
            index.add(np.asarray(alive, dtype=np.uint64), vecs)
        self._dirty += len(rowids)

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._n])
        for name in ("_m", "_alive", "_enabled", "_recommended", "_faq", "_kcode", "_tcode", "_rowid"):
            arr = getattr(self, name)
            arr[: keep.size] = arr[keep]
        self._alive[keep.size :] = False
        self._n = int(keep.size)
        self._slot = {int(r): i for i, r in enumerate(self._rowid[: self._n])}  # the graph is keyed by row id

    # --- search ------------------------------------------------------------------------------------------------
    def _mask(self, flt: Filter, at: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.bool_]:
        sel: Any = slice(0, self._n) if at is None else at
        mask = self._alive[sel] & self._enabled[sel]
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

    def _candidates(self, index: Any, q: F32, top_k: int) -> npt.NDArray[np.int64]:
        """Slots of the graph's candidates for ``q`` (×4, at least 100), plus rows waiting in ``_pending``."""
        res = index.search(q, max(top_k * 4, 100))
        get = self._slot.get
        slots = [s for s in (get(int(k)) for k in np.asarray(res.keys)) if s is not None]
        if self._pending:
            slots.extend(s for s in (get(r) for r in self._pending) if s is not None)
            slots = list(dict.fromkeys(slots))
        return np.asarray(slots, dtype=np.int64)

    def _search_ann(self, q: F32, top_k: int, threshold: float, flt: Filter) -> list[tuple[int, float]] | None:
        slots = self._candidates(self._ann, q, top_k)
        slots = slots[self._mask(flt, slots)] if slots.size else slots
        if slots.size < top_k and slots.size < int(self._mask(flt).sum()):
            return None  # the filter ate the candidates: exact search instead
        if slots.size == 0:
            return []
        return self._top(self._m[slots] @ q, slots, top_k, threshold)

    # --- HNSW lifecycle --------------------------------------------------------------------------------------------
    def start_ann(self) -> bool:
        """Start the background job that restores the saved graph or builds one (no-op if running or there)."""
        with self.lock:
            if self._ann is not None or self._ann_busy or self._ann_gave_up or self._closed:
                return False
            try:
                import usearch.index  # noqa: F401
            except ImportError:
                self._ann_gave_up = True
                return False
            self._begin_job()
            self._job = threading.Thread(target=self._ann_job, name="knora-hnsw", daemon=True)
            self._job.start()
            return True

    def _begin_job(self) -> None:
        self._ann_busy = True
        self._pending.clear()
        self._job_seq = self.seq

    def build_ann_now(self) -> None:
        """Build the HNSW index synchronously, ignoring any saved file (benchmarks, warm-up); saves it if a store
        is attached."""
        self.wait_ann()
        with self.lock:
            self._ann = None
            self._ann_gave_up = False
            self._begin_job()
        self._ann_job(restore=False)

    def wait_ann(self, timeout: float | None = None) -> bool:
        """Wait for a running job (restore/build/save); True when none is left running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self._job  # a finished job may have started a save: follow it
            if job is None or job is threading.current_thread() or not job.is_alive():
                return True
            job.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if job.is_alive():
                return False

    def _ann_job(self, restore: bool = True) -> None:
        ok = False
        try:
            ok = self._run_ann_job(restore)
            if not ok and restore and not self._closed:
                with self.lock:
                    self._begin_job()  # the saved graph was unusable: build from the set instead
                ok = self._run_ann_job(False)
        except Exception:
            log.exception("HNSW restore/build failed; staying with exact search")
        with self.lock:
            if self._ann is None:  # not published: nothing of the graph survives
                self._ann_busy = False
                self._pending.clear()
                if not ok and not self._closed:
                    self._ann_gave_up = True
            elif not self._closed:
                if self._ann_busy:  # a rebuild that did not publish: the old graph serves on, with what changed
                    rest = list(self._pending)
                    self._pending.clear()
                    self._ann_busy = False
                    self._graph_removed = 0  # do not retry at once
                    if rest:
                        self._apply(self._ann, *self._snapshot(rest))
                self._maybe_save(force=self.ann_source == "built")

    def _run_ann_job(self, restore: bool) -> bool:
        """Restore (``restore``) or build a graph, bring it up to date and publish it; False if nothing usable."""
        t0 = time.perf_counter()
        stats: dict[str, float] = {}
        if restore:
            if self.store is None:
                return False
            index = self._restore(stats)
        else:
            index = self._build()
            stats["build_s"] = time.perf_counter() - t0
        if index is None:
            return False
        self._drain(index)
        t1 = time.perf_counter()
        recall = self._tune(index)
        stats["recall_check_s"] = time.perf_counter() - t1
        with self.lock:
            if self._closed:
                return True
            rest = list(self._pending)
            self._pending.clear()
            if rest:
                self._apply(index, *self._snapshot(rest))
            if restore and not self._consistent(index):
                log.warning("restored HNSW graph disagrees with the vector set; rebuilding")
                return False
            if not restore:
                self._dirty = len(index)
            stats["total_s"] = time.perf_counter() - t0
            self._ann, self.ann_recall, self.ann_source, self.ann_stats = (index, recall,
                                                                           "restored" if restore else "built", stats)
            self._graph_removed = 0
            self._ann_busy = False  # from here on changes go straight to the graph
        log.info("HNSW index over %d vectors %s in %.1f s (recall@10 %.3f, ef %d)", len(index), self.ann_source,
                 stats["total_s"], recall, index.expansion_search)
        return True

    def _restore(self, stats: dict[str, float]) -> Any:
        """The saved graph brought up to the set's state, or None (no file, foreign, corrupt, log trimmed)."""
        assert self.store is not None
        t1 = time.perf_counter()
        got = self.store.load()
        if got is None:
            return None
        index, meta, valid = got
        stats["restore_s"] = time.perf_counter() - t1
        lo, hi = min(valid, self._job_seq), max(meta.seq, self._job_seq)
        touched = self.store.changed(lo, hi)
        if touched is None:
            log.warning("HNSW file at seq %d cannot be brought up to date from the change log (trimmed past it, or a"
                        " sequence this database never reached); rebuilding", meta.seq)
            return None
        stats["replayed_rows"] = float(len(touched))
        self.ann_expansion = int(meta.expansion_search)
        index.expansion_search = self.ann_expansion
        with self.lock:
            self._pending.update(touched)
        return index

    def _drain(self, index: Any) -> None:
        """Apply pending changes to a graph that is not yet published, in rounds, holding the lock only to copy."""
        for _ in range(8):
            with self.lock:
                if len(self._pending) < 256 or self._closed:
                    return
                batch = list(self._pending)
                self._pending.clear()
                snap = self._snapshot(batch)
            self._apply(index, *snap)

    def _consistent(self, index: Any) -> bool:
        """The graph holds exactly the set's row ids, and its vectors are the set's — all of them in a small set,
        256 sampled in a large one (lock held)."""
        if len(index) != len(self._slot):
            return False
        if not self._slot:
            return True
        keys = np.fromiter(self._slot.keys(), dtype=np.uint64, count=len(self._slot))
        if not bool(np.all(np.asarray(index.contains(keys)))):
            return False
        rng = np.random.default_rng()
        pick = keys if keys.size <= 2048 else keys[rng.choice(keys.size, size=256, replace=False)]
        got = np.asarray(index.get(pick, dtype=np.float32), dtype=np.float32).reshape(pick.size, self.dim)
        want = self._m[np.asarray([self._slot[int(k)] for k in pick], dtype=np.int64)]
        norms = np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1)
        cos = np.einsum("ij,ij->i", got, want) / np.where(norms > 0, norms, 1)
        return bool(np.all(cos > 0.97))

    def _build(self) -> Any:
        from usearch.index import Index

        index = Index(ndim=self.dim, metric="cos", dtype=self.ann_dtype, connectivity=16, expansion_add=128,
                      expansion_search=self.ann_expansion)
        with self.lock:
            n = self._n
        step = 50_000
        for start in range(0, n, step):
            with self.lock:  # rows changed after the job began are in _pending and re-applied afterwards
                if self._closed:
                    return None
                sl = np.flatnonzero(self._alive[start : min(n, start + step)]) + start
                keys = self._rowid[sl].astype(np.uint64)
                data = self._m[sl]
                keys, first = np.unique(keys, return_index=True)
                data = data[first]
            if keys.size:
                present = np.asarray(index.contains(keys), dtype=bool)
                if present.any():
                    keys, data = keys[~present], data[~present]
                index.add(keys, data, threads=0)
        return index

    def _tune(self, index: Any, samples: int = 50, k: int = 10) -> float:
        """The recall check: recall@10 of what search serves (graph candidates re-scored with the float32 matrix)
        against exact search, over ``samples`` perturbed stored vectors; ``expansion_search`` is doubled from its
        current value until the target is met (or 1024)."""
        with self.lock:
            n = self._n
            alive = np.flatnonzero(self._alive[:n])
            if alive.size == 0:
                return 1.0
            m = self._m  # a row rewritten meanwhile only blurs the estimate
        rng = np.random.default_rng(0)
        pick = alive[rng.choice(alive.size, size=min(samples, alive.size), replace=False)]
        queries = m[pick] + rng.normal(0, 0.05, size=(pick.size, self.dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        best = np.full((pick.size, 0), -1, dtype=np.int64)
        best_s = np.full((pick.size, 0), -np.inf, dtype=np.float32)
        for start in range(0, n, 200_000):  # exact top-k in blocks: no n × samples score matrix
            end = min(n, start + 200_000)
            live = np.flatnonzero(self._alive[start:end])
            if live.size == 0:
                continue
            s = queries @ m[start:end].T
            s[:, ~self._alive[start:end]] = -np.inf
            kk = min(k, live.size)
            part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            best = np.concatenate([best, part + start], axis=1)
            best_s = np.concatenate([best_s, np.take_along_axis(s, part, axis=1)], axis=1)
            order = np.argsort(-best_s, axis=1)[:, :k]
            best, best_s = np.take_along_axis(best, order, axis=1), np.take_along_axis(best_s, order, axis=1)
        truth = [set(row.tolist()) for row in best]
        ef = max(self.ann_expansion, 16)
        while True:
            index.expansion_search = ef
            got = 0
            for qv, t in zip(queries, truth, strict=True):
                with self.lock:
                    slots = self._candidates(index, qv, k)
                    if slots.size:
                        top = slots[np.argsort(-(self._m[slots] @ qv))[:k]]
                        got += len(t & set(top.tolist()))
            recall = got / (k * len(truth))
            if recall >= self.recall_target or ef >= 1024:
                break
            ef *= 2
        self.ann_expansion = ef
        return recall

    # --- persistence -----------------------------------------------------------------------------------------------
    def _save_threshold(self) -> int:
        if self.save_every is not None:
            return self.save_every
        return max(1000, min(20_000, len(self._slot) // 50))

    def _maybe_save(self, force: bool = False) -> None:
        """Start a background save when the graph drifted far enough from its file (lock held)."""
        if self.store is None or self._ann is None or self._ann_busy or self._closed:
            return
        if not force and self._dirty < self._save_threshold():
            return
        self._begin_job()
        self._job = threading.Thread(target=self._save_job, name="knora-hnsw-save", daemon=True)
        self._job.start()

    def _save_job(self) -> None:
        """Write the graph as of ``_job_seq``; changes arriving meanwhile wait in ``_pending`` (searched exactly)."""
        assert self.store is not None
        t0 = time.perf_counter()
        with self.lock:
            dirty, self._dirty = self._dirty, 0
        ok = False
        try:
            self.store.save(self._ann, seq=self._job_seq, expansion_search=int(self._ann.expansion_search),
                            recall=self.ann_recall)
            ok = True
            self.ann_stats["save_s"] = time.perf_counter() - t0
        except Exception:
            log.exception("saving the HNSW graph failed; will retry after more changes")
        finally:
            with self.lock:
                if not ok:
                    self._dirty += dirty
                rest = list(self._pending)
                self._pending.clear()
                self._ann_busy = False
                if rest and self._ann is not None:
                    self._apply(self._ann, *self._snapshot(rest))

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
        """Stop background work; with ``save``, leave the file exact at the current sequence when cheap to do."""
        if save and self._ann is not None:  # a build in progress is abandoned, not awaited
            try:
                self.save_now()
            except Exception:
                log.exception("saving the HNSW graph at close failed")
        with self.lock:
            self._closed = True
        if wait:
            self.wait_ann(timeout=5)
