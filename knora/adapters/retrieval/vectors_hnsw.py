"""The HNSW side of a :class:`~knora.adapters.retrieval.vectors.VectorSet`: the graph kept equal to the set,
and the background jobs that restore, build, tune and save it. Split from ``vectors.py`` so each module is one
concern: ``VectorSet`` owns the float32 matrix, filter columns and exact search; this mixin the graph's life.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from knora.adapters.retrieval.hnsw_file import GraphStore

log = logging.getLogger("knora.adapters.retrieval.vectors")  # the records keep their logger

F32 = npt.NDArray[np.float32]


class HnswGraph:
    """Mixin of :class:`VectorSet`: the graph and its jobs. The attributes below are set by ``VectorSet``."""

    dim: int
    recall_target: float
    ann_dtype: str
    store: GraphStore | None
    save_every: int | None
    seq: int
    lock: threading.RLock
    rebuild_share: float
    rebuild_min: int
    ann_recall: float | None
    ann_expansion: int
    ann_source: str | None
    ann_stats: dict[str, float]
    _m: F32
    _alive: npt.NDArray[np.bool_]
    _rowid: npt.NDArray[np.int64]
    _n: int
    _slot: dict[int, int]
    _ann: Any  # usearch.index.Index once restored or built
    _ann_busy: bool
    _ann_gave_up: bool
    _pending: set[int]
    _job_seq: int
    _job: threading.Thread | None
    _closed: bool
    _dirty: int
    _graph_removed: int

    # --- keeping the graph equal to the set -----------------------------------------------------------------
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
        self._job = threading.Thread(target=self._ann_job, kwargs={"restore": False}, name="knora-hnsw",
                                     daemon=True)
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

    def _candidates(self, index: Any, q: F32, top_k: int) -> npt.NDArray[np.int64]:
        """Slots of the graph's candidates for ``q`` (×4, at least 100), plus rows waiting in ``_pending``."""
        res = index.search(q, max(top_k * 4, 100))
        get = self._slot.get
        slots = [s for s in (get(int(k)) for k in np.asarray(res.keys)) if s is not None]
        if self._pending:
            slots.extend(s for s in (get(r) for r in self._pending) if s is not None)
            slots = list(dict.fromkeys(slots))
        return np.asarray(slots, dtype=np.int64)

    # --- HNSW lifecycle -------------------------------------------------------------------------------------
    def start_ann(self) -> bool:
        """Start the background job that restores the saved graph or builds one (no-op if running or there).
        """
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
        """Build the HNSW index synchronously, ignoring any saved file (benchmarks, warm-up); saves it if a
        store is attached."""
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
                # a rebuild that did not publish: the old graph serves on, with what changed
                if self._ann_busy:
                    rest = list(self._pending)
                    self._pending.clear()
                    self._ann_busy = False
                    self._graph_removed = 0  # do not retry at once
                    if rest:
                        self._apply(self._ann, *self._snapshot(rest))
                self._maybe_save(force=self.ann_source == "built")

    def _run_ann_job(self, restore: bool) -> bool:
        """Restore (``restore``) or build a graph, bring it up to date and publish it; False if nothing
        usable."""
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
            self._ann, self.ann_recall, self.ann_source, self.ann_stats = (
                index, recall, "restored" if restore else "built", stats)
            self._graph_removed = 0
            self._ann_busy = False  # from here on changes go straight to the graph
        log.info("HNSW index over %d vectors %s in %.1f s (recall@10 %.3f, ef %d)", len(index),
                 self.ann_source, stats["total_s"], recall, index.expansion_search)
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
            log.warning("HNSW file at seq %d cannot be brought up to date from the change log (trimmed past"
                        " it, or a sequence this database never reached); rebuilding", meta.seq)
            return None
        stats["replayed_rows"] = float(len(touched))
        self.ann_expansion = int(meta.expansion_search)
        index.expansion_search = self.ann_expansion
        with self.lock:
            self._pending.update(touched)
        return index

    def _drain(self, index: Any) -> None:
        """Apply pending changes to a graph that is not yet published, in rounds, holding the lock only to
        copy."""
        for _ in range(8):
            with self.lock:
                if len(self._pending) < 256 or self._closed:
                    return
                batch = list(self._pending)
                self._pending.clear()
                snap = self._snapshot(batch)
            self._apply(index, *snap)

    def _consistent(self, index: Any) -> bool:
        """The graph holds exactly the set's row ids, and its vectors are the set's — all of them in a small
        set, 256 sampled in a large one (lock held)."""
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
        """The recall check: recall@10 of what search serves (graph candidates re-scored with the float32
        matrix) against exact search, over ``samples`` perturbed stored vectors; ``expansion_search`` is
        doubled from its current value until the target is met (or 1024)."""
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

    # --- persistence ----------------------------------------------------------------------------------------
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
        """Write the graph as of ``_job_seq``; changes arriving meanwhile wait in ``_pending`` (searched
        exactly)."""
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
