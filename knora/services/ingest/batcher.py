"""Shares embedding batches between documents that are ingested at the same time.

A short document yields one or two chunks; embedding each document on its own would run the model on batches of
one or two and waste most of its throughput. Every job hands its texts to the batcher for its embedder, which runs
one full batch at a time while the other jobs parse and write — so the embedder, the real bottleneck, is never
idle and never under-filled while work is waiting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

import numpy as np

from knora.ports.embedder import Embedder, Vector


class EmbedBatcher:
    def __init__(self, embedder: Embedder, batch_size: int = 32) -> None:
        self.embedder = embedder
        self._batch = max(1, batch_size)
        self._pending: deque[tuple[str, asyncio.Future[Vector]]] = deque()
        self._runner: asyncio.Task[None] | None = None

    async def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[Vector]] = []
        for text in texts:
            fut: asyncio.Future[Vector] = loop.create_future()
            self._pending.append((text, fut))
            futures.append(fut)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        rows = await asyncio.gather(*futures)
        return np.stack(rows).astype(np.float32, copy=False)

    async def _run(self) -> None:
        # Documents usually arrive in a burst: linger a moment so the first batch is not a batch of one.
        for _ in range(5):
            if len(self._pending) >= self._batch:
                break
            await asyncio.sleep(0.005)
        while self._pending:
            batch = [self._pending.popleft() for _ in range(min(self._batch, len(self._pending)))]
            live = [(t, f) for t, f in batch if not f.cancelled()]
            if not live:
                continue
            try:
                vectors = await self.embedder.embed_passages([t for t, _ in live])
            except Exception as exc:  # noqa: BLE001 - the failure belongs to the callers, each gets it
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), vec in zip(live, vectors, strict=True):
                if not fut.done():
                    fut.set_result(vec)
