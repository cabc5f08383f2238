"""Ingestion's embedding in a worker process: runs there, niced, loads a model once, survives the worker's
death, dies with the server, and an upload through the real services is embedded there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from knora.adapters.embedders._base import LocalEmbedder
from knora.adapters.embedders.hash import HashEmbedder
from knora.adapters.embedders.process_lane import EmbeddingWorkerLost, ProcessLane
from knora.settings import Settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


class _WhereAmI(LocalEmbedder):
    """Each passage's vector is (process id, how many times this process loaded the model)."""

    loads = 0

    def __init__(self) -> None:
        super().__init__("test:where", 2)

    def _load(self) -> None:
        type(self).loads += 1

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.array([[os.getpid(), type(self).loads] for _ in texts], dtype=np.float32)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _eventually(check: Callable[[], bool], seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


@pytest.fixture
def lane() -> ProcessLane:
    made = ProcessLane(nice=5)
    yield made
    made.shutdown()


def test_calls_run_in_one_niced_worker_process_and_errors_come_back(lane: ProcessLane) -> None:
    base = os.getpriority(os.PRIO_PROCESS, 0)
    first = lane.submit(os.getpid).result(60)
    assert first != os.getpid()
    assert lane.pid == first
    assert lane.submit(os.getpid).result(60) == first  # the same worker, not one per call
    if sys.platform.startswith("linux"):
        assert lane.submit(os.getpriority, os.PRIO_PROCESS, 0).result(60) == min(19, base + 5)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base  # the server is untouched
    with pytest.raises(ValueError, match="invalid literal"):
        lane.submit(int, "not a number").result(60)
    assert lane.submit(os.getpid).result(60) == first  # an error does not cost the worker


async def test_a_background_copy_embeds_in_the_worker_and_loads_the_model_once(lane: ProcessLane) -> None:
    _WhereAmI.loads = 0
    query_side = _WhereAmI()
    ingest = query_side.background_copy(lane)
    rows = np.concatenate([await ingest.embed_passages([f"passage {i}", "x"]) for i in range(3)])
    raw = rows * np.linalg.norm([lane.pid or 0, 1])  # undo the L2 normalisation of (pid, loads)
    assert {round(float(v)) for v in raw[:, 0]} == {lane.pid}
    assert {round(float(v)) for v in raw[:, 1]} == {1}  # three batches, one load
    assert _WhereAmI.loads == 0  # nothing was loaded in this process
    vector = await query_side.embed_query("a question")  # queries stay here
    assert vector.tolist() == pytest.approx((np.array([os.getpid(), 1]) / np.hypot(os.getpid(), 1)).tolist())


async def test_the_worker_gives_the_same_vectors_as_the_server_would(lane: ProcessLane) -> None:
    texts = ["Knora answers from the team's own documents.", "知识库问答", ""]
    here = await HashEmbedder().embed_passages(texts)
    there = await HashEmbedder().background_copy(lane).embed_passages(texts)
    assert there.tolist() == here.tolist()


def test_a_worker_that_dies_fails_its_batch_and_the_next_batch_gets_a_new_worker(lane: ProcessLane) -> None:
    first = lane.submit(os.getpid).result(60)
    held = lane.submit(time.sleep, 120)
    assert _eventually(lambda: held.running())
    os.kill(first, signal.SIGKILL)
    with pytest.raises(EmbeddingWorkerLost, match="exited during the batch"):
        held.result(60)
    second = lane.submit(os.getpid).result(60)
    assert second != first
    assert not _alive(first)


def test_shutdown_kills_the_worker_at_once_and_cancels_what_waits() -> None:
    lane = ProcessLane(nice=0)
    pid = lane.submit(os.getpid).result(60)
    running = lane.submit(time.sleep, 300)
    waiting = lane.submit(os.getpid)
    assert _eventually(lambda: running.running())
    lane.shutdown()
    with pytest.raises(EmbeddingWorkerLost):
        running.result(60)
    assert waiting.cancelled()
    assert _eventually(lambda: not _alive(pid))
    with pytest.raises(RuntimeError, match="shut down"):
        lane.submit(os.getpid)


def test_the_worker_exits_when_the_server_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of the server: the worker sees its pipe close and exits (nothing is left running)."""
    script = textwrap.dedent("""
        import os, sys, time
        from knora.adapters.embedders.process_lane import ProcessLane

        if __name__ == "__main__":
            lane = ProcessLane()
            print(lane.submit(os.getpid).result(60), flush=True)
            time.sleep(300)
    """)
    path = tmp_path / "server.py"
    path.write_text(script)
    proc = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True,  # noqa: S603
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        worker = int(proc.stdout.readline())
        assert _alive(worker)
        proc.kill()
        proc.wait(30)
        assert _eventually(lambda: not _alive(worker))
    finally:
        proc.kill()


async def test_an_upload_is_embedded_in_the_worker_process(make_settings: Callable[..., Settings]) -> None:
    from knora.domain.search import SearchParams
    from tests.conftest import started

    async with started(make_settings(embed_isolation="process")) as c:
        lane = c.embedders.lane
        assert isinstance(lane, ProcessLane)
        assert lane.pid is None  # started by the first upload, not at start-up
        tenant = c.default_tenant_id
        kb = await c.kb_service.create(tenant, {"name": "docs"})
        k = await c.ingest_service.add_file(tenant, kb.id, "ship.md",
                                            b"# Shipping\n\nParcels ship on Tuesdays from the north dock.")
        await c.jobs.wait_idle(120)
        assert (await c.repos.knowledge.get(tenant, k.id)).parse_status == "completed"
        worker = lane.pid
        assert worker is not None
        assert worker != os.getpid()
        hits = await c.search_service.search(tenant, SearchParams(
            knowledge_base_id=kb.id, knowledge_base_ids=[kb.id], query_text="when do parcels ship",
            vector_threshold=0.0, keyword_threshold=0.0))
        assert hits
        assert "Tuesdays" in hits[0].content
    assert _eventually(lambda: not _alive(worker))  # closing the services ended the worker
