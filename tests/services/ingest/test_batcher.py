"""The shared embedding batcher: concurrent callers share full batches and each gets its own rows back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from knora.services.ingest.batcher import EmbedBatcher
from tests.polling import eventually

pytestmark = pytest.mark.unit


class _Recorder:
    model_id = "test:len"
    dimension = 2

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        await asyncio.sleep(0.01)
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        return np.array([len(text), 1.0], dtype=np.float32)


async def test_concurrent_callers_share_batches_and_get_their_own_rows() -> None:
    model = _Recorder()
    batcher = EmbedBatcher(model, batch_size=8)  # type: ignore[arg-type]
    docs = [[f"d{d}-" + "x" * i for i in range(3)] for d in range(6)]
    results = await asyncio.gather(*(batcher.embed(texts) for texts in docs))
    for texts, vecs in zip(docs, results, strict=True):
        assert vecs.shape == (3, 2)
        assert vecs[:, 0].tolist() == [len(t) for t in texts]
    assert sum(len(b) for b in model.batches) == 18
    assert all(len(b) <= 8 for b in model.batches)
    assert len(model.batches) == 3


async def test_a_failed_batch_fails_its_callers_only() -> None:
    model = _Recorder(fail_on="bad")
    batcher = EmbedBatcher(model, batch_size=2)  # type: ignore[arg-type]
    ok, bad = await asyncio.gather(batcher.embed(["a", "b"]), batcher.embed(["bad", "c"]),
                                   return_exceptions=True)
    assert isinstance(bad, RuntimeError)
    assert not isinstance(ok, BaseException)
    assert ok.shape == (2, 2)
    assert (await batcher.embed([])).shape == (0, 2)


class _Gated(_Recorder):
    """Holds every call until released, recording how many calls were in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.gate.wait()
        self.in_flight -= 1
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_full_batch_is_handed_over_while_the_current_one_runs() -> None:
    model = _Gated()
    batcher = EmbedBatcher(model, batch_size=4, window=1)  # type: ignore[arg-type]
    first = asyncio.ensure_future(batcher.embed(["a", "b", "c", "d"]))
    await eventually(lambda: model.batches)
    assert len(model.batches) == 1  # the first batch is running, held at the gate
    second = asyncio.ensure_future(batcher.embed(["e", "f", "g", "h"]))  # a full batch: prefetched at once
    await _settle()
    assert len(model.batches) == 2
    assert model.most_in_flight == 2
    third = asyncio.ensure_future(batcher.embed(["i"]))  # part-filled: waits for a running batch to finish
    await _settle()
    assert len(model.batches) == 2
    model.gate.set()
    results = await asyncio.gather(first, second, third)
    assert [r[:, 0].tolist() for r in results] == [[1.0] * 4, [1.0] * 4, [1.0]]
    assert model.batches[2] == ["i"]
    assert model.most_in_flight == 2


async def test_a_window_is_cut_into_equal_batches_of_similar_length() -> None:
    model = _Recorder()
    batcher = EmbedBatcher(model, batch_size=4, window=2)  # type: ignore[arg-type]
    lengths = [9, 1, 7, 3, 8, 2, 6]
    texts = ["x" * n for n in lengths]
    vecs = await asyncio.gather(*(batcher.embed([t]) for t in texts))
    assert [v[0, 0] for v in vecs] == lengths  # every caller gets its own row back
    assert [[len(t) for t in b] for b in model.batches] == [[1, 2, 3, 6], [7, 8, 9]]


async def test_the_oldest_text_waits_behind_at_most_one_window() -> None:
    model = _Recorder()
    batcher = EmbedBatcher(model, batch_size=2, window=2)  # type: ignore[arg-type]
    oldest = asyncio.ensure_future(batcher.embed(["z" * 50]))
    newer = [asyncio.ensure_future(batcher.embed(["y" * n])) for n in range(1, 10)]
    await asyncio.gather(oldest, *newer)
    first_window = [t for b in model.batches[:2] for t in b]
    assert "z" * 50 in first_window


class _Counting(_Recorder):
    """Records how many texts were handed over but not yet embedded, at the most."""

    def __init__(self) -> None:
        super().__init__()
        self.most_waiting = 0
        self.batcher: EmbedBatcher | None = None

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        assert self.batcher is not None
        waiting = len(self.batcher._pending) + sum(len(b) for b in self.batcher._ready) + len(texts)
        self.most_waiting = max(self.most_waiting, waiting)
        return await super().embed_passages(texts)


async def test_a_large_document_is_handed_over_two_slices_at_a_time() -> None:
    model = _Counting()
    batcher = EmbedBatcher(model, batch_size=4, window=1)  # type: ignore[arg-type]
    model.batcher = batcher
    texts = ["x" * (i % 7 + 1) for i in range(100)]
    vectors = await batcher.embed_bounded(texts, slice_size=8)
    assert vectors[:, 0].tolist() == [len(t) for t in texts]  # every row back, in order
    assert sum(len(b) for b in model.batches) == 100
    assert model.most_waiting <= 2 * 8  # never the whole document in the queue
    small = await batcher.embed_bounded(["ab", "c"], slice_size=8)
    assert small[:, 0].tolist() == [2.0, 1.0]


async def test_a_cancelled_large_document_stops_embedding() -> None:
    model = _Gated()
    batcher = EmbedBatcher(model, batch_size=4, window=1)  # type: ignore[arg-type]
    job = asyncio.ensure_future(batcher.embed_bounded([f"t{i}" for i in range(400)], slice_size=8))
    await eventually(lambda: model.batches)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    model.gate.set()
    await _settle()
    await asyncio.sleep(0.05)
    # what was in flight when it was cancelled (two slices at most), not the 400 texts
    assert sum(len(b) for b in model.batches) <= 16


async def test_a_large_document_reports_each_slice_embedded() -> None:
    batcher = EmbedBatcher(_Recorder(), batch_size=4, window=1)  # type: ignore[arg-type]
    heard: list[int] = []
    await batcher.embed_bounded([f"t{i}" for i in range(37)], slice_size=8, on_progress=heard.append)
    assert heard == [8, 16, 24, 32, 37]
