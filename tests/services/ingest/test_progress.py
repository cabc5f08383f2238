"""A large document's progress while its job runs: written to its row (every replica's list shows it), at a
bounded rate, and gone when the job ends — completed or failed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from knora.domain.knowledge import PROGRESS_KEY, IngestProgress, ParseStatus, ProgressStage
from knora.ports.embedder import Embedder
from knora.services.ingest.progress import ProgressReporter
from knora.settings import Settings
from tests.conftest import RECORDING, record_retrieval, started
from tests.polling import eventually

pytestmark = pytest.mark.integration

# 240 one-sentence paragraphs, chunked 80 characters at a time: far more passages than one slice (8 × 4)
TEXT = "\n\n".join(f"Sentence {i} says something about topic {i % 17}." for i in range(240))


class _Held:
    """The real embedder, held after its first two calls until released: a job caught mid-embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self.calls = 0
        self.release = asyncio.Event()

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > 2:
            await self.release.wait()
        return await self.inner.embed_passages(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        return await self.inner.embed_query(text)


async def _hold_embedding(c: Any) -> _Held:
    batcher = await c.embedders.batcher(None, tenant_id=c.default_tenant_id)
    held = _Held(batcher.embedder)
    batcher.embedder = held
    return held


async def _progress(c: Any, knowledge_id: str) -> dict[str, Any] | None:
    k = await c.repos.knowledge.get(None, knowledge_id)
    value = k.metadata.get(PROGRESS_KEY) if k is not None else None
    return value if isinstance(value, dict) else None


@pytest.fixture
async def c(make_settings: Callable[..., Settings], db_url: str) -> Any:
    async with started(make_settings(database_url=db_url, embed_batch_size=4), RECORDING) as c:
        yield c


async def test_a_large_document_shows_how_far_its_embedding_is_then_completes_without_it(c: Any) -> None:
    held = await _hold_embedding(c)
    kb = await c.kb_service.create(c.default_tenant_id, {
        "name": "big", "chunking_config": {"chunk_size": 80, "chunk_overlap": 0}})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "big.txt", TEXT.encode())
    seen = await eventually(lambda: _progress(c, k.id))
    assert seen is not None, "no progress was recorded while the document was embedded"
    p = IngestProgress.model_validate(seen)
    assert p.stage == ProgressStage.EMBEDDING
    assert p.total > 32
    assert 0 <= p.done < p.total
    assert (await c.repos.knowledge.get(None, k.id)).parse_status == ParseStatus.PROCESSING
    held.release.set()
    await c.jobs.wait_idle(60)
    done = await c.repos.knowledge.get(None, k.id)
    assert done.parse_status == ParseStatus.COMPLETED, done.error_message
    assert PROGRESS_KEY not in done.metadata
    page = await c.repos.chunks.list(c.default_tenant_id, k.id, page=1, page_size=1, chunk_types=None)
    assert page.total == p.total


async def test_a_failed_large_document_keeps_no_progress(c: Any) -> None:
    record_retrieval(c).fail_next_index = RuntimeError("index down")
    kb = await c.kb_service.create(c.default_tenant_id, {
        "name": "big", "chunking_config": {"chunk_size": 80, "chunk_overlap": 0}})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "big.txt", TEXT.encode())
    await c.jobs.wait_idle(60)
    failed = await c.repos.knowledge.get(None, k.id)
    assert failed.parse_status == ParseStatus.FAILED
    assert "index down" in failed.error_message
    assert PROGRESS_KEY not in failed.metadata


async def test_a_small_document_writes_no_progress(c: Any) -> None:
    writes: list[Any] = []
    real = c.repos.knowledge.set_progress

    async def counting(knowledge_id: str, progress: Any) -> bool:
        writes.append(progress)
        return bool(await real(knowledge_id, progress))

    c.repos.knowledge.set_progress = counting
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "small"})
    k = await c.ingest_service.add_file(c.default_tenant_id, kb.id, "small.txt", b"One short paragraph.")
    await c.jobs.wait_idle(30)
    assert (await c.repos.knowledge.get(None, k.id)).parse_status == ParseStatus.COMPLETED
    assert writes == []


class _Repo:
    """Records what a reporter writes (the reporter's own logic, apart from any database)."""

    def __init__(self) -> None:
        self.writes: list[IngestProgress | None] = []

    async def set_progress(self, knowledge_id: str, progress: IngestProgress | None) -> bool:
        self.writes.append(progress)
        return True


@pytest.mark.unit
async def test_writes_are_throttled_and_the_time_left_follows_the_rate() -> None:
    now = [100.0]
    repo = _Repo()
    reporter = ProgressReporter(repo, "k", 1000, interval=2.0, clock=lambda: now[0])  # type: ignore[arg-type]
    async with reporter:
        first = repo.writes[-1]
        assert first is not None
        assert (first.done, first.eta_seconds) == (0, None)
        now[0] += 1.0
        reporter.embedded(100)  # 1 s after the first write: too soon
        await asyncio.sleep(0)
        assert len(repo.writes) == 1
        now[0] += 1.5
        reporter.embedded(250)  # 2.5 s in, 250 of 1000: 7.5 s left at that rate
        await eventually(lambda: len(repo.writes) == 2)
        last = repo.writes[-1]
        assert last is not None
        assert (last.done, last.eta_seconds) == (250, 7.5)
        await reporter.indexing()
        last = repo.writes[-1]
        assert last is not None
        assert (last.stage, last.done) == (ProgressStage.INDEXING, 1000)
    assert len(repo.writes) == 3  # completing writes nothing more: the completion drops the figure


@pytest.mark.unit
async def test_a_failure_removes_the_figure_and_a_disabled_reporter_writes_nothing() -> None:
    repo = _Repo()
    with pytest.raises(RuntimeError):
        async with ProgressReporter(repo, "k", 10):  # type: ignore[arg-type]
            raise RuntimeError("embedder down")
    assert repo.writes[-1] is None
    quiet = _Repo()
    async with ProgressReporter(quiet, "k", 10, enabled=False) as r:  # type: ignore[arg-type]
        r.embedded(5)
        await r.indexing()
    assert quiet.writes == []
