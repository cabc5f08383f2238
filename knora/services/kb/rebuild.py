"""Rebuilding a knowledge base's index (WeKnora's ``POST /knowledge-bases/:id/rebuild-index``, which its UI
calls after the indexing strategy changes).

A job (kind ``kb_rebuild``): every completed document's chunks are indexed again from the stored chunks,
the source of truth, embedded with the knowledge base's current model when it keeps vectors (none when
``indexing_strategy.vector_enabled`` is off). Per document the new rows are upserted first and only then are
rows of chunks that no longer exist removed, so a document never drops out of search mid-rebuild. The
task's record (``knora.services.kb.tasks``) lists the documents done, so a job cut short by a restart goes
on where it stopped.
"""

from __future__ import annotations

import logging
from typing import Any

from knora.domain.common import new_id
from knora.domain.errors import BadRequest
from knora.domain.knowledge import KBType
from knora.domain.search import IndexRow
from knora.ports.retrieval import StoredRows
from knora.services.ingest.build import searchable
from knora.services.kb.copy import KBCopyService
from knora.services.kb.tasks import KBTaskProgress, TaskProgressStore

log = logging.getLogger(__name__)

JOB_KIND = "kb_rebuild"


class IndexRebuildService:
    def __init__(self, copies: KBCopyService) -> None:
        self.c = copies
        self.progress = TaskProgressStore(copies.blobs, JOB_KIND)

    async def start(self, tenant_id: int, kb_id: str) -> KBTaskProgress:
        kb = await self.c.knowledge_base(tenant_id, kb_id, "The")
        if kb.type != KBType.DOCUMENT:
            raise BadRequest("Only a document knowledge base's index can be rebuilt")
        docs = await self.c.completed_documents(tenant_id, kb.id)
        p = KBTaskProgress(task_id=new_id(), source_id=kb.id, target_id=kb.id, total=len(docs),
                           message="Task queued, waiting to start")
        return await self.progress.queue(self.c.jobs, tenant_id, p)

    async def run(self, payload: dict[str, Any]) -> None:
        if (opened := await self.progress.open(payload)) is None:
            return
        tenant_id, p = opened
        try:
            await self._rebuild(tenant_id, p)
        except Exception as exc:
            log.exception("index rebuild %s failed", p.task_id)
            await self.progress.fail(tenant_id, p, str(exc) or type(exc).__name__, "Rebuild failed")

    async def give_up(self, payload: dict[str, Any], reason: str) -> None:
        await self.progress.give_up(payload, reason, "Rebuild failed")

    async def _rebuild(self, tenant_id: int, p: KBTaskProgress) -> None:
        kb = await self.c.knowledge_base(tenant_id, p.source_id, "The")
        engine = self.c.retrieval()
        docs = await self.c.completed_documents(tenant_id, kb.id)
        p.status, p.total, p.processed, p.message = "processing", len(docs), len(p.copied), "Rebuilding"
        await self.progress.save(tenant_id, p)
        batcher = (await self.c.embedders.batcher(kb.embedding_model_id or None, tenant_id=tenant_id)
                   if kb.indexing_strategy.vector_enabled else None)
        for k in docs:
            if k.id in p.copied or engine is None:
                continue
            chunks = searchable(await self.c.chunks(tenant_id, k.id))
            contents = [c.index_content(k.title) for c in chunks]
            vectors = await batcher.embed(contents) if batcher is not None and contents else None
            rows = [IndexRow(source_id=c.id, chunk_id=c.id, knowledge_id=k.id, knowledge_base_id=kb.id,
                             tenant_id=tenant_id, content=text, tag_id=c.tag_id, is_enabled=c.is_enabled,
                             embedding=vectors[i].tolist() if vectors is not None else None)
                    for i, (c, text) in enumerate(zip(chunks, contents, strict=True))]
            await engine.index(rows)
            if isinstance(engine, StoredRows):
                keep = {c.id for c in chunks}
                stale = [r.chunk_id for r in await engine.rows_for_knowledge([k.id])
                         if r.chunk_id not in keep]
                await engine.delete_chunks(stale)
            if k.embedding_model_id != kb.embedding_model_id:
                await self.c.repos.knowledge.update(k.model_copy(update={
                    "embedding_model_id": kb.embedding_model_id}))
            p.copied[k.id] = k.id
            p.processed += 1
            await self.progress.save(tenant_id, p)
        p.status, p.progress, p.message = "completed", 100, "Index rebuilt"
        await self.progress.save(tenant_id, p)
