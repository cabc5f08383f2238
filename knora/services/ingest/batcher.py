"""Shares embedding batches between documents that are ingested at the same time.

A short document yields one or two chunks; embedding each document on its own would run the model on batches
of one or two and waste most of its throughput. Every job hands its texts to the batcher for its embedder,
which runs one full batch at a time while the other jobs parse and write — so the embedder, the real
bottleneck, is never idle and never under-filled while work is waiting.

Two things keep it busy and efficient:

* **Prefetch.** While a batch is being embedded, the next one is handed to the embedder as soon as a full
  batch is waiting (never a part-filled one: those wait for the running batch, collecting texts meanwhile). An
  in-process embedder serialises its calls with a thread lock, so the next batch starts the moment the current
  one releases it, without waiting for the event loop to get round to submitting it.
* **Length windows.** The texts waiting (up to ``window`` batches' worth, oldest first) are sorted by length
  and cut into equal batches, so that a model that pads a batch to its longest text pads less. A window is
  finished before the next one is taken, so no text waits behind more than one window of newer ones.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from knora.ports.embedder import Embedder, Vector

_Item = tuple[str, "asyncio.Future[Vector]"]


class EmbedBatcher:
    LINGER_SECONDS = 0.025  # an idle batcher waits this long for a burst to fill its first batch

    def __init__(self, embedder: Embedder, batch_size: int = 32, *, window: int = 4) -> None:
        self.embedder = embedder
        self._batch = max(1, batch_size)
        self._window = max(1, window)
        self._pending: deque[_Item] = deque()
        self._ready: deque[list[_Item]] = deque()  # the current window's batches, not yet started
        self._in_flight: set[asyncio.Task[None]] = set()  # at most two: the running batch and the next one
        self._linger: asyncio.TimerHandle | None = None
        self._kick_soon: asyncio.Handle | None = None

    async def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[Vector]] = []
        for text in texts:
            fut: asyncio.Future[Vector] = loop.create_future()
            self._pending.append((text, fut))
            futures.append(fut)
        # on the next loop turn, so that texts added in the same turn share a window
        if self._kick_soon is None:
            self._kick_soon = loop.call_soon(self._arrived)
        rows = await asyncio.gather(*futures)
        return np.stack(rows).astype(np.float32, copy=False)

    async def embed_bounded(self, texts: Sequence[str], slice_size: int,
                            on_progress: Callable[[int], None] | None = None) -> Vector:
        """``embed`` for a document of any size: at most two slices of ``slice_size`` texts are handed over at
        a time (the next waits while the current is embedded, so the embedder never idles between them), so
        a huge upload neither floods the queue other documents share nor keeps computing after it is
        cancelled (a cancelled job leaves at most the slices in flight). ``on_progress`` hears the number of
        texts embedded so far after each slice."""
        size = max(1, slice_size)
        if len(texts) <= size:
            return await self.embed(texts)
        parts: list[Vector] = []
        in_flight: deque[asyncio.Task[Vector]] = deque()
        done = 0

        async def collect() -> None:
            nonlocal done
            part = await in_flight.popleft()
            parts.append(part)
            done += len(part)
            if on_progress is not None:
                on_progress(done)

        try:
            for start in range(0, len(texts), size):
                in_flight.append(asyncio.ensure_future(self.embed(texts[start:start + size])))
                if len(in_flight) >= 2:
                    await collect()
            while in_flight:
                await collect()
        finally:
            for task in in_flight:
                task.cancel()
        return np.concatenate(parts, axis=0)

    def _arrived(self) -> None:
        self._kick_soon = None
        self._kick(after_batch=False)

    def _kick(self, *, after_batch: bool) -> None:
        """Start what can start: any batch when idle, a full one while one batch runs, nothing beyond two."""
        if self._linger is not None:
            if len(self._pending) < self._batch:
                return  # still lingering for the first batch of a burst
            self._linger.cancel()
            self._linger = None
        while len(self._in_flight) < 2:
            idle = not self._in_flight
            if idle and not after_batch and not self._ready and len(self._pending) < self._batch:
                # Documents usually arrive in a burst: linger a moment so the first batch is not a batch of
                # one.
                self._linger = asyncio.get_running_loop().call_later(self.LINGER_SECONDS, self._end_linger)
                return
            batch = self._next_batch(full_only=not idle)
            if batch is None:
                return
            task = asyncio.create_task(self._embed(batch))
            self._in_flight.add(task)
            task.add_done_callback(self._batch_done)

    def _end_linger(self) -> None:
        self._linger = None
        self._kick(after_batch=True)

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        if not task.cancelled():  # cancelled = the loop is shutting down: start nothing new
            self._kick(after_batch=True)

    def _next_batch(self, *, full_only: bool) -> list[_Item] | None:
        """The next batch to embed, or None; with ``full_only`` no part-filled batch cut from too few
        texts."""
        if not self._ready:
            live = [item for item in self._pending if not item[1].cancelled()]
            if not live or (full_only and len(live) < self._batch):
                self._pending = deque(live)
                return None
            take = min(len(live), self._batch * self._window)
            window, self._pending = live[:take], deque(live[take:])
            window.sort(key=lambda item: len(item[0]))
            n = -(-len(window) // self._batch)  # batches in this window, of near-equal size
            size = -(-len(window) // n)
            self._ready.extend(window[i:i + size] for i in range(0, len(window), size))
        if full_only and len(self._ready) == 1 and len(self._ready[0]) < self._batch:
            # the window's last, part-filled batch: let it collect texts while the running one ends
            return None
        batch = [item for item in self._ready.popleft() if not item[1].cancelled()]
        return batch or self._next_batch(full_only=full_only)

    async def _embed(self, batch: list[_Item]) -> None:
        try:
            vectors = await self.embedder.embed_passages([t for t, _ in batch])
        except asyncio.CancelledError:
            for _, fut in batch:
                fut.cancel()  # nobody is left to wait forever on a batch that will never finish
            raise
        except Exception as exc:  # noqa: BLE001 - the failure belongs to the callers, each gets it
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), vec in zip(batch, vectors, strict=True):
            if not fut.done():
                fut.set_result(vec)
