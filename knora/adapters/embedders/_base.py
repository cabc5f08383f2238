"""What every in-process embedder shares: batching, a worker thread, one lock per model, input caps.

Inference is CPU-bound and can take seconds per batch; running it in ``asyncio.to_thread`` keeps the event
loop (and every other request) responsive. A model instance is not safe to call from two threads at once and
two concurrent calls would only fight over the same cores, so each instance serialises its calls with a lock.
The model itself loads lazily on first use, inside the worker thread, so building the services stays instant.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any, ClassVar

import numpy as np

from knora.ports.embedder import Vector

MAX_INPUT_CHARS = 20_000  # far beyond any model's context; stops a pathological input from eating memory


def cap(text: str) -> str:
    return text[:MAX_INPUT_CHARS]


def l2_normalise(matrix: np.ndarray) -> Vector:
    """Row-wise L2 normalisation; all-zero rows (empty input) stay zero rather than becoming NaN."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vector = (m / norms).astype(np.float32, copy=False)
    return out


_TWINS: dict[str, LocalEmbedder] = {}  # this process's background instances, by key (see embed_on_lane)
_TWINS_LOCK = threading.Lock()


def embed_on_lane(twin: LocalEmbedder, texts: list[str]) -> Vector:
    """A batch of passages on a lane's thread or process. In the server's process ``twin`` is the instance
    itself; in a worker process it is a fresh, unloaded copy that came through a pipe, so the first copy of
    each key is kept there and loads the model once: later batches reuse it."""
    if twin._lane is not None:  # in the process that made it (a thread lane): the instance itself
        return twin.encode_sync(texts, False)
    with _TWINS_LOCK:  # unpickled in a worker (pickling drops the lane)
        local = _TWINS.setdefault(twin.twin_key, twin)
    return local.encode_sync(texts, False)


class LocalEmbedder(ABC):
    """Base of in-process embedders: subclasses implement ``_load`` and ``_encode`` (synchronous, one
    batch). ``_loaded_fields``: the attributes ``_load`` fills (model objects), left out when an instance is
    pickled for a worker process, which loads its own."""

    _loaded_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, model_id: str, dimension: int, batch_size: int = 32) -> None:
        self._model_id = model_id
        self._dimension = dimension
        self._batch_size = max(int(batch_size), 1)
        self._lock = threading.Lock()
        self._loaded = False
        self._lane: Executor | None = None  # where passages are embedded; None: asyncio's default threads
        self.twin_key = ""  # a background copy's key (embed_on_lane); "" for the query instance

    def background_copy(self, lane: Executor) -> LocalEmbedder:
        """Another instance of the same model (loaded on its first batch) that embeds passages on ``lane``:
        ingestion's work then never holds the lock a user's query embedding waits for, and runs at the
        lane's priority, in its thread or worker process (``lanes``, ``process_lane``)."""
        twin = copy.copy(self)
        twin._lock = threading.Lock()
        twin._loaded = False  # ``_load`` replaces the model fields the copy shares until then
        twin._lane = lane
        twin.twin_key = uuid.uuid4().hex
        return twin

    def __getstate__(self) -> dict[str, Any]:
        """What a worker process needs to build the same model: the settings, not the loaded model, the lock
        or the lane."""
        state = dict(self.__dict__)
        for name in ("_lock", "_lane", *self._loaded_fields):
            state[name] = None
        state["_loaded"] = False
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    @abstractmethod
    def _load(self) -> None:
        """Load the model (called once, under the lock, in a worker thread)."""

    @abstractmethod
    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Embed one batch; returns shape (len(texts), dimension)."""

    def encode_sync(self, texts: Sequence[str], is_query: bool = False) -> Vector:
        """Blocking embed of any number of texts, in batches; used by the async methods and by benchmarks."""
        capped = [cap(t) for t in texts]
        if not capped:
            return np.zeros((0, self._dimension), dtype=np.float32)
        # Batches of similar length waste less compute on padding; results go back to the input order.
        order = sorted(range(len(capped)), key=lambda i: len(capped[i]))
        ordered = [capped[i] for i in order]
        with self._lock:
            if not self._loaded:
                self._load()
                self._loaded = True
            parts = [self._encode(ordered[i:i + self._batch_size], is_query)
                     for i in range(0, len(ordered), self._batch_size)]
        out = np.empty((len(capped), parts[0].shape[1]), dtype=np.float32)
        out[order] = np.concatenate(parts, axis=0)
        return l2_normalise(out)

    async def embed_passages(self, texts: Sequence[str]) -> Vector:
        # One thread hop per batch: the lock is released between batches, so a user's query embedding can slip
        # in while a large document is being ingested instead of waiting for the whole document.
        out = np.zeros((0, self._dimension), dtype=np.float32)
        chunks = [list(texts[i:i + self._batch_size]) for i in range(0, len(texts), self._batch_size)]
        loop = asyncio.get_running_loop()
        if self._lane is None:
            parts = [await loop.run_in_executor(None, self.encode_sync, batch, False) for batch in chunks]
        else:
            parts = [await loop.run_in_executor(self._lane, embed_on_lane, self, batch) for batch in chunks]
        return np.concatenate(parts, axis=0) if parts else out

    async def embed_query(self, text: str) -> Vector:
        vectors: Vector = await asyncio.to_thread(self.encode_sync, [text], True)
        first: Vector = vectors[0]  # a row of the matrix
        return first
