"""The write side of the in-memory BM25 postings (:class:`~knora.adapters.retrieval.postings.KeywordIndex`):
immutable CSR segments, and the slots, filter columns and segments that upserts, removes and the bulk load
change.

Split from ``postings.py`` so that the scorer there (exact MaxScore top-k) reads on its own; this mixin only
appends, kills and merges. See ``postings.py`` for the layout (slots, live bits, segments).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from knora.adapters.retrieval.codes import Codes

_MERGE_SEGMENTS = 8  # more small segments than this → merge them into one

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

# A row as the index takes it: id, kb_id, knowledge_id, tag_id, is_enabled, is_recommended, knowledge_type,
# blob.
Row = tuple[int, str, str, str | None, int, int, str, bytes]

# Change-log operations, as both engines' logs record them (``knora_ret_log.op``).
UPSERT, DELETE = 1, 2


def collapse_log(entries: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """(deleted, upserted) row ids from change-log entries ``(row id, op)`` in sequence order: each row's last
    operation wins."""
    last: dict[int, int] = {}
    for rid, op in entries:
        last[rid] = op
    return [r for r, op in last.items() if op == DELETE], [r for r, op in last.items() if op == UPSERT]


@dataclass
class _Segment:
    lo: int  # slot range [lo, hi) this segment's rows come from
    hi: int
    terms: npt.NDArray[np.uint32]  # sorted distinct term ids
    ptr: I64  # postings of terms[i] are rows[ptr[i]:ptr[i+1]]
    rows: I32  # slots, ascending within a term
    tf: npt.NDArray[Any]  # term frequency (uint16, or uint32 if needed)
    maxtf: npt.NDArray[Any]  # per term, for the upper bound
    mindl: I64  # per term: shortest row containing it (at build time)
    dead: int = 0  # postings-bearing slots of this segment deleted since the build
    df_cache: dict[int, int] = field(default_factory=dict)

    def find(self, tid: int) -> int:
        i = int(self.terms.searchsorted(np.uint32(tid)))  # same dtype: no copy of the term array
        return i if i < self.terms.shape[0] and int(self.terms[i]) == tid else -1

    @property
    def postings(self) -> int:
        return int(self.rows.shape[0])


def _segment(tokens: npt.NDArray[np.uint32], token_slot: I32, lo: int, hi: int, dl: I64) -> _Segment:
    """CSR postings from (token id, slot) pairs with duplicates: one sort of packed 64-bit keys, then run
    lengths."""
    if tokens.size == 0:
        empty = np.zeros(0, dtype=np.uint32)
        return _Segment(lo, hi, empty, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                        np.zeros(0, dtype=np.uint16), np.zeros(0, dtype=np.uint16),
                        np.zeros(0, dtype=np.int64))
    key = tokens.astype(np.uint64)
    key <<= np.uint64(32)
    key |= token_slot.astype(np.uint64)
    key.sort()
    change = np.empty(key.shape[0], dtype=bool)
    change[0] = True
    np.not_equal(key[1:], key[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    del change
    tf64 = np.diff(np.append(starts, key.shape[0]))
    uniq = key[starts]
    del key, starts
    rows = (uniq & np.uint64(0xFFFFFFFF)).astype(np.int32)
    term = (uniq >> np.uint64(32)).astype(np.uint32)
    del uniq
    tf = tf64.astype(np.uint16) if tf64.max() < 65536 else tf64.astype(np.uint32)
    del tf64
    tchange = np.empty(term.shape[0], dtype=bool)
    tchange[0] = True
    np.not_equal(term[1:], term[:-1], out=tchange[1:])
    tstarts = np.flatnonzero(tchange)
    del tchange
    terms = term[tstarts]
    ptr = np.append(tstarts, term.shape[0]).astype(np.int64)
    maxtf = np.maximum.reduceat(tf, tstarts)
    mindl = np.minimum.reduceat(dl[rows], tstarts)
    return _Segment(lo, hi, terms, ptr, rows, tf, maxtf, mindl)




class PostingsWrites:
    """Mixin of :class:`KeywordIndex`: its write path. The attributes are created by ``KeywordIndex``."""

    seq: int
    lock: threading.RLock
    _cap: int
    _n: int
    _dl: I64
    _alive: npt.NDArray[np.bool_]
    _enabled: npt.NDArray[np.bool_]
    _recommended: npt.NDArray[np.bool_]
    _kb: I32
    _kn: I32
    _tag: I32
    _type: I32
    _rowid: I64
    _sig: I64
    _slot_of: I32
    _codes: Codes
    _segments: list[_Segment]
    _seg_lo: list[int]
    _live: int
    _total: int
    _version: int
    _scratch: npt.NDArray[np.float64]

    # --- maintenance ----------------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        new = max(need, self._cap * 2, 1024)
        for name in ("_dl", "_alive", "_enabled", "_recommended", "_kb", "_kn", "_tag", "_type", "_rowid",
                     "_sig"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype)
            arr[: old.shape[0]] = old
            setattr(self, name, arr)
        self._scratch = np.zeros(new, dtype=np.float64)
        self._cap = new

    def _map_rowids(self, rowids: I64, slots: I64) -> None:
        top = int(rowids.max()) + 1 if rowids.size else 0
        if top > self._slot_of.shape[0]:
            new = np.full(max(top, self._slot_of.shape[0] * 2, 1024), -1, dtype=np.int32)
            new[: self._slot_of.shape[0]] = self._slot_of
            self._slot_of = new
        self._slot_of[rowids] = slots

    def _slot(self, rowid: int) -> int:
        return int(self._slot_of[rowid]) if 0 <= rowid < self._slot_of.shape[0] else -1

    def _set_meta(self, slot: int | I64, rows: Sequence[Row]) -> None:
        code = self._codes.code
        self._kb[slot] = [code(r[1]) for r in rows]
        self._kn[slot] = [code(r[2]) for r in rows]
        self._tag[slot] = [code(r[3] or None) for r in rows]
        self._type[slot] = [code(r[6]) for r in rows]
        self._enabled[slot] = [bool(r[4]) for r in rows]
        self._recommended[slot] = [bool(r[5]) for r in rows]

    def upsert(self, rows: Sequence[Row]) -> None:
        """Add or replace rows (their blobs must be set). A row whose blob is unchanged only has its filter
        columns updated (enable/disable); otherwise its old slot dies and a new segment holds its postings."""
        with self.lock:
            fresh: list[Row] = []
            meta_only: list[tuple[int, Row]] = []
            gone: list[int] = []
            for r in rows:
                slot = self._slot(r[0])
                if slot >= 0 and self._alive[slot]:
                    if int(self._sig[slot]) == hash(r[7]):
                        meta_only.append((slot, r))
                        continue
                    gone.append(r[0])
                fresh.append(r)
            if meta_only:
                self._set_meta(np.asarray([s for s, _ in meta_only], dtype=np.int64),
                               [r for _, r in meta_only])
                self._version += 1
            if gone:
                self.remove(gone)
            if fresh:
                self._add(fresh)
                if len(self._segments) > _MERGE_SEGMENTS:
                    self._merge_small()

    def _add(self, rows: Sequence[Row]) -> None:
        lo = self._n
        n = len(rows)
        self._grow(lo + n)
        hi = lo + n
        blobs = [r[7] for r in rows]
        lens = np.fromiter((len(b) >> 2 for b in blobs), dtype=np.int64, count=n)
        tokens = np.frombuffer(b"".join(blobs), dtype=np.uint32)
        slots = np.arange(lo, hi, dtype=np.int64)
        self._dl[lo:hi] = lens
        self._alive[lo:hi] = True
        self._set_meta(slots, rows)
        self._rowid[lo:hi] = [r[0] for r in rows]
        self._sig[lo:hi] = [hash(b) for b in blobs]
        self._n = hi
        self._map_rowids(self._rowid[lo:hi], slots)
        seg = _segment(tokens, np.repeat(slots.astype(np.int32), lens), lo, hi, self._dl)
        self._segments.append(seg)
        self._seg_lo.append(lo)
        self._live += n
        self._total += int(lens.sum())
        self._version += 1

    def remove(self, rowids: Iterable[int]) -> None:
        with self.lock:
            changed = False
            for rid in rowids:
                slot = self._slot(rid)
                if slot < 0 or not self._alive[slot]:
                    continue
                self._alive[slot] = False
                self._slot_of[rid] = -1
                self._live -= 1
                self._total -= int(self._dl[slot])
                seg = self._segments[bisect.bisect_right(self._seg_lo, slot) - 1]
                seg.dead += 1
                seg.df_cache.clear()
                changed = True
            if changed:
                self._version += 1

    def _merge_small(self) -> None:
        """Merge every segment after the first (the load's) into one, dropping dead postings."""
        small = self._segments[1:]
        lo, hi = small[0].lo, small[-1].hi
        toks, slots = [], []
        for s in small:
            counts = np.diff(s.ptr)
            term = np.repeat(s.terms, counts)
            live = self._alive[s.rows]
            # expand tf back into repeated tokens so _segment can rebuild (segments are small by construction)
            reps = s.tf[live].astype(np.int64)
            toks.append(np.repeat(term[live], reps))
            slots.append(np.repeat(s.rows[live], reps))
        seg = _segment(np.concatenate(toks).astype(np.uint32), np.concatenate(slots).astype(np.int32), lo, hi,
                       self._dl)
        self._segments = [self._segments[0], seg]
        self._seg_lo = [self._segments[0].lo, lo]

    def apply_log(self, deleted: Sequence[int], upserted: Sequence[int], rows: Sequence[Row],
                  seq: int) -> None:
        """Apply a replayed stretch of the change log (``collapse_log``): ``rows`` are the upserted rows as
        the database has them now (an upserted row missing from them was deleted since, and leaves the index);
        the index then reflects log position ``seq``."""
        with self.lock:
            self.remove(deleted)
            present = {r[0] for r in rows}
            self.remove([r for r in upserted if r not in present])
            self.upsert(rows)
            self.seq = seq

    # --- bulk load ------------------------------------------------------------------------------------------
    @classmethod
    def load(cls, batches: Iterable[Sequence[Row]]) -> Self:
        """Build from row batches (every blob set): slots in arrival order, one segment, one sort."""
        idx = cls()
        tok_parts: list[npt.NDArray[np.uint32]] = []
        len_parts: list[I64] = []
        for rows in batches:
            if not rows:
                continue
            lo = idx._n
            n = len(rows)
            idx._grow(lo + n)
            blobs = [r[7] for r in rows]
            lens = np.fromiter((len(b) >> 2 for b in blobs), dtype=np.int64, count=n)
            tok_parts.append(np.frombuffer(b"".join(blobs), dtype=np.uint32))
            len_parts.append(lens)
            slots = np.arange(lo, lo + n, dtype=np.int64)
            idx._dl[lo : lo + n] = lens
            idx._alive[lo : lo + n] = True
            idx._set_meta(slots, rows)
            idx._rowid[lo : lo + n] = [r[0] for r in rows]
            idx._sig[lo : lo + n] = [hash(b) for b in blobs]
            idx._n = lo + n
            idx._map_rowids(idx._rowid[lo : lo + n], slots)
        n = idx._n
        if n:
            lens = np.concatenate(len_parts)
            tokens = np.concatenate(tok_parts)
            tok_parts.clear()
            token_slot = np.repeat(np.arange(n, dtype=np.int32), lens)
            idx._segments = [_segment(tokens, token_slot, 0, n, idx._dl)]
            idx._seg_lo = [0]
            idx._live = n
            idx._total = int(lens.sum())
        return idx
