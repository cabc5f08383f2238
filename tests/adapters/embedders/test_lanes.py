"""Ingestion's embedding yields to chat: passages run on a model instance of their own, in a lowered-priority
daemon thread, so a query never waits for an upload's batch."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import numpy as np
import pytest

from knora.adapters.embedders._base import LocalEmbedder
from knora.adapters.embedders.hash import HashEmbedder
from knora.adapters.embedders.lanes import BackgroundLane, thread_nice
from knora.services.ingest.embedders import EmbedderRegistry
from knora.settings import Settings

pytestmark = pytest.mark.unit


class _Blocking(LocalEmbedder):
    """Loads count instances; a passage batch blocks until ``release`` is set; records the thread's nice."""

    loads = 0

    def __init__(self) -> None:
        super().__init__("test:blocking", 2)
        self.release = threading.Event()
        self.started = threading.Event()
        self.nice_seen: int | None = None

    def _load(self) -> None:
        type(self).loads += 1

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not is_query:
            self.nice_seen = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            self.started.set()
            self.release.wait(30)
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_the_lane_runs_work_in_a_daemon_thread_of_lower_priority() -> None:
    lane = BackgroundLane(nice=5)
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert lane.submit(lambda: threading.current_thread().daemon).result(10) is True
    assert lane.native_id is not None
    assert thread_nice(lane.native_id) == min(19, base + 5)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base  # the caller is untouched
    boom = lane.submit(lambda: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        boom.result(10)
    assert lane.submit(lambda: "still running").result(10) == "still running"
    lane.shutdown()
    with pytest.raises(RuntimeError):
        lane.submit(lambda: None)


async def test_a_query_is_answered_while_an_upload_batch_holds_the_background_instance() -> None:
    _Blocking.loads = 0
    chat = _Blocking()
    lane = BackgroundLane(nice=5)
    ingest = chat.background_copy(lane)
    assert isinstance(ingest, _Blocking)
    assert ingest is not chat
    batch = asyncio.ensure_future(ingest.embed_passages(["a long upload passage"]))
    assert await asyncio.to_thread(ingest.started.wait, 30)
    # the upload's batch is running (and blocked); a user's query still gets its vector
    query = await asyncio.wait_for(chat.embed_query("question"), 30)
    assert query.tolist() == pytest.approx([len("question") / np.hypot(8, 1), 1 / np.hypot(8, 1)], rel=1e-5)
    assert not batch.done()
    ingest.release.set()
    rows = await batch
    assert rows.shape == (1, 2)
    assert _Blocking.loads == 2  # two instances of the model, each loaded once
    if sys.platform.startswith("linux"):
        assert ingest.nice_seen is not None
        assert ingest.nice_seen >= 5  # the batch ran in the lane's thread
    lane.shutdown()


async def test_the_registry_gives_ingestion_a_background_instance(tmp_path: object) -> None:
    settings = Settings(embedder="local:hash", data_dir=tmp_path)  # type: ignore[arg-type]
    lane = BackgroundLane()

    def build(spec: str, s: Settings, policy: object) -> HashEmbedder:
        return HashEmbedder()

    registry = EmbedderRegistry(settings, build, lane=lane)  # type: ignore[arg-type]
    query_side = await registry.get(None, tenant_id=1)
    batcher = await registry.batcher(None, tenant_id=1)
    assert batcher.embedder is not query_side
    assert isinstance(batcher.embedder, HashEmbedder)
    assert await registry.batcher(None, tenant_id=1) is batcher  # one per model
    plain = EmbedderRegistry(settings, build)  # type: ignore[arg-type]
    assert (await plain.batcher(None, tenant_id=1)).embedder is await plain.get(None, tenant_id=1)
    lane.shutdown()
