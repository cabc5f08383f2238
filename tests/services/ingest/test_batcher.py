"""The shared embedding batcher: concurrent callers share full batches and each gets its own rows back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from knora.services.ingest.batcher import EmbedBatcher

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
        assert vecs.shape == (3, 2) and vecs[:, 0].tolist() == [len(t) for t in texts]
    assert sum(len(b) for b in model.batches) == 18
    assert all(len(b) <= 8 for b in model.batches) and len(model.batches) == 3


async def test_a_failed_batch_fails_its_callers_only() -> None:
    model = _Recorder(fail_on="bad")
    batcher = EmbedBatcher(model, batch_size=2)  # type: ignore[arg-type]
    ok, bad = await asyncio.gather(batcher.embed(["a", "b"]), batcher.embed(["bad", "c"]), return_exceptions=True)
    assert isinstance(bad, RuntimeError) and not isinstance(ok, BaseException) and ok.shape == (2, 2)
    assert (await batcher.embed([])).shape == (0, 2)
