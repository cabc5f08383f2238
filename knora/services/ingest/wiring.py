"""Wires the store-api area: blobs, embedders, parsers, repositories, the job queue and the ingestion services.

Sets on the container: ``blobs``, ``embedders``, ``parsers``, ``repos`` (kbs, knowledge, chunks, tags, models,
jobs), ``jobs``, ``kb_service``, ``ingest_service``, ``chunk_service``, ``model_service``.
The job workers start only once the whole container is wired (retrieval is wired after this module, and a job
must never index into nothing); the sample knowledge base is ingested in the background after that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import SimpleNamespace
from typing import Any

from knora.adapters.blobs.local import LocalBlobStore
from knora.adapters.db.repos._mapping import GatedSessions
from knora.adapters.db.repos.chunks import SqlChunkRepo
from knora.adapters.db.repos.jobs import SqlJobRepo
from knora.adapters.db.repos.kbs import SqlKnowledgeBaseRepo
from knora.adapters.db.repos.knowledge import SqlKnowledgeRepo
from knora.adapters.db.repos.models import SqlModelRepo
from knora.adapters.db.repos.tags import SqlTagRepo
from knora.adapters.jobs.inprocess import InProcessJobQueue
from knora.adapters.parsers.registry import ParserRegistry
from knora.ports.embedder import Embedder
from knora.ports.retrieval import RetrievalEngine
from knora.services.ingest.chunk_edit import ChunkService
from knora.services.ingest.chunker import split_document
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.ingest.service import JOB_KIND, IngestDeps, IngestService
from knora.services.kb.models import ModelService
from knora.services.kb.service import KnowledgeBaseService
from knora.settings import Settings

log = logging.getLogger(__name__)


def _build_embedder(spec: str, settings: Settings) -> Embedder:
    from knora.adapters.embedders.registry import build_embedder

    return build_embedder(spec, settings)


async def wire(c: Any) -> None:
    s: Settings = c.settings
    c.blobs = LocalBlobStore(s.data_dir / "blobs")
    c.embedders = EmbedderRegistry(s, _build_embedder)
    c.parsers = ParserRegistry(s.max_expanded_bytes)
    sessions = GatedSessions(c.sessions, asyncio.Lock() if s.is_sqlite else None)
    c.repos = SimpleNamespace(kbs=SqlKnowledgeBaseRepo(sessions), knowledge=SqlKnowledgeRepo(sessions),
                              chunks=SqlChunkRepo(sessions), tags=SqlTagRepo(sessions),
                              models=SqlModelRepo(sessions), jobs=SqlJobRepo(sessions))
    if s.job_queue == "redis":
        log.warning("job_queue=redis is not available yet; using the durable in-process queue on the database")
    c.jobs = InProcessJobQueue(c.repos.jobs, workers=max(s.ingest_concurrency, s.ingest_workers))

    def retrieval() -> RetrievalEngine | None:
        # Resolved at use: the retrieval area is wired after this module.
        return getattr(c, "retrieval", None)

    deps = IngestDeps(settings=s, repos=c.repos, blobs=c.blobs, parsers=c.parsers, embedders=c.embedders,
                      jobs=c.jobs, retrieval=retrieval, split=split_document)
    c.ingest_service = IngestService(deps)
    c.chunk_service = ChunkService(deps)
    c.kb_service = KnowledgeBaseService(c.repos, c.blobs, retrieval, lambda: s.embedder)
    c.model_service = ModelService(c.repos, c.embedders)
    await c.model_service.load_cache([c.default_tenant_id])
    c.jobs.register(JOB_KIND, c.ingest_service.process)

    async def _sample_kb() -> None:
        if s.sample_kb:
            from knora.services.ingest.sample import ensure_sample_kb

            try:
                await ensure_sample_kb(c)
            except Exception:
                log.exception("could not ingest the sample knowledge base")

    tasks: list[asyncio.Task[None]] = []

    async def _after_start() -> None:
        # Job workers need the retrieval engine, which is wired after this module; the sample KB is ingested
        # in the background so that start-up stays quick.
        await c.jobs.start()
        tasks.append(asyncio.create_task(_sample_kb(), name="knora-sample-kb"))

    c.on_started(_after_start)

    async def _close() -> None:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await c.jobs.stop()

    c.on_close(_close)
