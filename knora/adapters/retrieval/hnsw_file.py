"""On-disk form of a vector set's HNSW graph: the usearch file plus a trailer that says what it reflects.

One file per (knowledge base, dimension) under the engine's index directory::

    <usearch serialisation> <trailer JSON> <8-byte little-endian JSON length> b"KNORAHNS"

usearch reads its own header and ignores what follows, so the file restores (or memory-maps) as is. The
trailer names the database (a random id stored in that database), knowledge base, dimension, metric, scalar
type and the change-log sequence the graph reflects, with the row count and a CRC-32 of the usearch bytes; a
file whose trailer does not match what the engine expects, or whose bytes do not match the CRC, is ignored
(the caller rebuilds).

Writes go to a uniquely named temp file in the same directory, are fsynced and renamed over the final name, so
a reader (this process after a restart, or another process on the same database) sees either the old or the
new file, never a torn one; two processes saving the same set simply replace each other's (equally valid)
file.

A small sidecar (``.seq``) can later extend the sequence a file is valid through without rewriting it: when a
set has not changed since its last save but other knowledge bases' writes moved the log on, the sidecar
records "file <id> is still exact at seq N", so that trimming the log past the file's own sequence does not
force a rebuild.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import uuid
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

MAGIC = b"KNORAHNS"
FORMAT = 1
_TAIL = 16  # JSON length (8 bytes) + MAGIC
_MAX_TRAILER = 1 << 20


@dataclass(frozen=True)
class GraphMeta:
    """What a saved graph reflects; compared field by field with what the loader expects."""

    db_id: str
    kb_id: str
    dim: int
    metric: str
    dtype: str
    seq: int  # change-log sequence the graph reflects (all of this KB's entries <= seq are in it)
    count: int  # vectors in the graph
    expansion_search: int = 64
    recall: float | None = None
    file_id: str = ""
    format: int = FORMAT
    payload_len: int = 0
    crc32: int = 0


def file_for(index_dir: Path, db_id: str, kb_id: str, dim: int) -> Path:
    """A file name safe for any KB id (hashed), specific to the database and dimension."""
    h = hashlib.sha256(f"{db_id}\0{kb_id}".encode()).hexdigest()[:24]
    return index_dir / f"kb-{h}-d{dim}.hnsw"


def _crc(path: Path, length: int) -> int:
    crc = 0
    with path.open("rb") as f:
        left = length
        while left > 0:
            chunk = f.read(min(left, 16 << 20))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    return crc


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _clean_temps(d: Path, max_age_s: float = 3600.0) -> None:
    """Temp files a crashed save left behind (unique names, so an old one is never a live write)."""
    now = time.time()
    for p in d.glob("*.hnsw.tmp-*"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > max_age_s:
                p.unlink()


def save(index: Any, path: Path, meta: GraphMeta) -> GraphMeta:
    """Write ``index`` (a usearch Index nobody mutates meanwhile) atomically to ``path``; returns the meta
    written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _clean_temps(path.parent)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        index.save(str(tmp))
        length = tmp.stat().st_size
        done = GraphMeta(**{**asdict(meta), "file_id": uuid.uuid4().hex, "payload_len": length,
                            "crc32": _crc(tmp, length), "format": FORMAT})
        trailer = json.dumps(asdict(done), sort_keys=True).encode()
        with tmp.open("ab") as f:
            f.write(trailer + len(trailer).to_bytes(8, "little") + MAGIC)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        return done
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_meta(path: Path) -> GraphMeta | None:
    """The trailer of ``path``, or None when the file is missing or its tail is not a Knora trailer."""
    try:
        size = path.stat().st_size
        if size < _TAIL:
            return None
        with path.open("rb") as f:
            f.seek(size - _TAIL)
            tail = f.read(_TAIL)
            if tail[8:] != MAGIC:
                return None
            n = int.from_bytes(tail[:8], "little")
            if n <= 0 or n > _MAX_TRAILER or n > size - _TAIL:
                return None
            f.seek(size - _TAIL - n)
            raw = json.loads(f.read(n))
        meta = GraphMeta(**raw)
        if meta.format != FORMAT or meta.payload_len != size - _TAIL - n:
            return None
        return meta
    except (OSError, ValueError, TypeError):
        return None


def valid_through(path: Path, meta: GraphMeta) -> int:
    """The sequence the file is known exact at: its own, or a later one its sidecar vouches for."""
    try:
        side = json.loads(path.with_suffix(".seq").read_text())
        if side.get("file_id") == meta.file_id and int(side["seq"]) > meta.seq:
            return int(side["seq"])
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return meta.seq


def vouch(path: Path, meta: GraphMeta, seq: int) -> None:
    """Record that the file ``meta`` describes is still exact at ``seq`` (small atomic write)."""
    side = path.with_suffix(".seq")
    tmp = side.with_name(f"{side.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        tmp.write_text(json.dumps({"file_id": meta.file_id, "seq": int(seq)}))
        os.replace(tmp, side)
    except OSError:
        log.warning("could not write %s", side, exc_info=True)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def load(path: Path, expect: dict[str, Any]) -> tuple[Any, GraphMeta] | None:
    """Restore the graph at ``path`` if its trailer matches ``expect`` (db_id, kb_id, dim, metric, dtype) and
    its bytes match the CRC; None (and a log line saying why) otherwise. The restored index is a private
    in-memory copy, so it can take adds and removes."""
    from usearch.index import Index

    meta = read_meta(path)
    if meta is None:
        if path.exists():
            log.warning("HNSW file %s has no valid trailer; ignoring it", path)
        return None
    got = asdict(meta)
    if wrong := {k: (got.get(k), v) for k, v in expect.items() if got.get(k) != v}:
        log.warning("HNSW file %s is for something else (%s); ignoring it", path, wrong)
        return None
    if _crc(path, meta.payload_len) != meta.crc32:
        log.warning("HNSW file %s is corrupt (checksum); ignoring it", path)
        return None
    try:
        index: Any = Index.restore(str(path))
    except Exception:
        log.warning("HNSW file %s could not be restored", path, exc_info=True)
        return None
    if index is None or index.ndim != meta.dim or len(index) != meta.count:
        log.warning("HNSW file %s does not match its trailer; ignoring it", path)
        return None
    index.expansion_search = meta.expansion_search
    return index, meta


class GraphStore(Protocol):
    """Persistence of one set's HNSW graph (implemented by :class:`FileGraphStore`)."""

    # (index, meta with .seq/.expansion_search/.recall, valid seq)
    def load(self) -> tuple[Any, Any, int] | None: ...

    def save(self, index: Any, *, seq: int, expansion_search: int, recall: float | None) -> Any: ...

    def changed(self, after: int, upto: int) -> set[int] | None: ...

    def vouch(self, seq: int) -> None: ...


class FileGraphStore:
    """Where one vector set keeps its graph: the file, what it must match, and how to ask the change log."""

    def __init__(self, path: Path, expect: dict[str, Any], changed: Any) -> None:
        self.path = path
        self.expect = expect  # db_id, kb_id, dim, metric, dtype
        self._changed = changed
        self.saved: GraphMeta | None = None  # the file this process last wrote or restored

    def changed(self, after: int, upto: int) -> set[int] | None:
        """Row ids of this KB touched by log entries in (after, upto]; None when the log no longer has
        them."""
        result: set[int] | None = self._changed(after, upto)
        return result

    def load(self) -> tuple[Any, GraphMeta, int] | None:
        got = load(self.path, self.expect)
        if got is None:
            return None
        index, meta = got
        self.saved = meta
        return index, meta, valid_through(self.path, meta)

    def save(self, index: Any, *, seq: int, expansion_search: int, recall: float | None) -> GraphMeta:
        meta = GraphMeta(db_id=self.expect["db_id"], kb_id=self.expect["kb_id"], dim=self.expect["dim"],
                         metric=self.expect["metric"], dtype=self.expect["dtype"], seq=seq, count=len(index),
                         expansion_search=expansion_search, recall=recall)
        self.saved = save(index, self.path, meta)
        return self.saved

    def vouch(self, seq: int) -> None:
        """The graph has not changed since this process saved or restored it: the file is exact at ``seq``
        too."""
        if self.saved is not None and seq > self.saved.seq:
            current = read_meta(self.path)
            # not replaced by another process
            if current is not None and current.file_id == self.saved.file_id:
                vouch(self.path, self.saved, seq)
