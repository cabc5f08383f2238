"""Splitting a large text in a process of its own, so the server's event loop keeps the interpreter.

The chunker is pure Python: on a 50 MB text it runs for seconds, and even in a thread it takes the
interpreter lock from the event loop in turns, every chat turn waiting for it many times (issue 18: a turn's
first token 4× slower during the first seconds of a large upload). Texts from ``MIN_CHARS`` up are split in a
worker process at the background priority instead; the drafts come back as a few arrays (positions, types,
parents) and one list of headers, which cost the server almost nothing to receive, and their contents are
cut from the text it already has. Smaller texts are split in the calling thread: a process round trip would
cost them more than it saves.

The text goes to the worker through a temporary file written a megabyte at a time, not through the pool's
pipe: pickling a 50 MB string is one interpreter call that held the lock for ~0.3 s (an event-loop watchdog
caught the pool's feeder thread in it), while each piece's encoding is a millisecond and the writes release
the lock.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from knora.adapters.embedders.lanes import lower_priority
from knora.domain.knowledge import ChunkingConfig
from knora.pacing import sheltered
from knora.services.ingest.chunker import ChunkDraft, split_document

MIN_CHARS = 1_000_000
PIECE_CHARS = 1 << 20  # characters encoded per write of the text to the worker's file
_TYPES = ("text", "parent_text")

# (starts, ends, chunk indexes, parent indexes (-1: none), type codes, context headers)
Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]


def split_columns(text: str, config: ChunkingConfig, cuts: Sequence[int]) -> Columns:
    """The worker's side: ``split_document``'s drafts as arrays (their contents are the text's slices)."""
    drafts = split_document(text, config, cuts)
    n = len(drafts)
    starts, ends = np.empty(n, np.int64), np.empty(n, np.int64)
    indexes, parents, types = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.uint8)
    for i, d in enumerate(drafts):
        starts[i], ends[i], indexes[i] = d.start_at, d.end_at, d.chunk_index
        parents[i] = -1 if d.parent_index is None else d.parent_index
        types[i] = _TYPES.index(d.chunk_type)
    return starts, ends, indexes, parents, types, [d.context_header for d in drafts]


def split_file(path: str, config: ChunkingConfig, cuts: Sequence[int]) -> Columns:
    """The worker's side: the text from the file ``write_text`` wrote."""
    text = Path(path).read_bytes().decode("utf-8", "surrogatepass")
    return split_columns(text, config, cuts)


def write_text(text: str) -> str:
    """``text`` in a new temporary file (UTF-8, lone surrogates kept), a piece at a time; its path."""
    fd, path = tempfile.mkstemp(prefix="knora-split-", suffix=".txt")
    with os.fdopen(fd, "wb") as f:
        for start in range(0, len(text), PIECE_CHARS):
            f.write(text[start:start + PIECE_CHARS].encode("utf-8", "surrogatepass"))
    return path


def drafts_from(text: str, columns: Columns) -> list[ChunkDraft]:
    starts, ends, indexes, parents, types, headers = columns
    rows = zip(starts.tolist(), ends.tolist(), indexes.tolist(), parents.tolist(), types.tolist(), headers,
               strict=True)
    return [ChunkDraft(content=text[s:e], chunk_index=int(i), start_at=int(s), end_at=int(e),
                       chunk_type="parent_text" if t else "text", parent_index=None if p < 0 else int(p),
                       context_header=h)
            for s, e, i, p, t, h in sheltered(rows)]


class ProcessSplitter:
    """``split(text, config, cuts)`` for ingestion: large texts in one worker process (started on first use,
    at ``nice``), small ones here. Called from a thread (``asyncio.to_thread``)."""

    def __init__(self, *, nice: int = 10, min_chars: int = MIN_CHARS) -> None:
        self._nice, self._min_chars = nice, min_chars
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self, text: str, config: ChunkingConfig, cuts: Sequence[int] = ()) -> list[ChunkDraft]:
        if len(text) < self._min_chars:
            return split_document(text, config, cuts)
        path = write_text(text)
        try:
            columns = self._executor().submit(split_file, path, config, list(cuts)).result()
        except concurrent.futures.process.BrokenProcessPool:
            self._reset()  # the worker died (killed, out of memory): this text is split here, the next there
            return split_document(text, config, cuts)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return drafts_from(text, columns)

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn, not fork: the server has threads (a forked child could inherit a held lock)
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                    initializer=lower_priority, initargs=(self._nice,))
            return self._pool

    def _reset(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        self._reset()
