"""Copying a knowledge base (WeKnora's ``POST /knowledge-bases/copy`` and ``…/:id/duplicate``).

A copy is a job of Knora's job queue (kind ``kb_copy``), so it survives a restart as the queue does: every
document of the source is written into the target with its original, its chunks (new ids, the same text and
order) and its index rows. The rows keep their stored vectors when both knowledge bases embed with the same
model and the engine can hand them back (``StoredRows``); otherwise the text is embedded again with the
target's model. A copied document becomes searchable in the target in one step: it is created
``processing`` (left so by a crash, the start-up requeue re-parses it from the copied original) and turns
``completed`` in the transaction that writes its chunks, after its rows are indexed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from knora.domain.common import new_id, utcnow
from knora.domain.errors import BadRequest, NotFound
from knora.domain.knowledge import (
    SEARCHABLE_CHUNK_TYPES,
    Chunk,
    KBType,
    Knowledge,
    KnowledgeBase,
    ParseStatus,
)
from knora.domain.search import IndexRow
from knora.ports.blobs import BlobStore
from knora.ports.jobs import JobQueue
from knora.ports.retrieval import RetrievalEngine, StoredRows
from knora.ports.store import Repositories
from knora.services.ingest.embedders import EmbedderRegistry
from knora.services.ingest.images import copy_images, image_prefix, stored_names, with_urls_of
from knora.services.ingest.quota import StorageQuota
from knora.services.kb.tasks import KBTaskProgress, TaskProgressStore

log = logging.getLogger(__name__)

JOB_KIND = "kb_copy"
_PAGE = 500


class KBCopyService:
    def __init__(self, repos: Repositories, blobs: BlobStore, embedders: EmbedderRegistry, jobs: JobQueue,
                 retrieval: Callable[[], RetrievalEngine | None], quota: StorageQuota | None = None) -> None:
        """``quota``: the tenant storage quota copies count against, as uploads do."""
        self.quota = quota
        self.repos = repos
        self.blobs = blobs
        self.embedders = embedders
        self.jobs = jobs
        self.retrieval = retrieval
        self.progress = TaskProgressStore(blobs, JOB_KIND)

    # --- requests -------------------------------------------------------------------------------------------
    async def knowledge_base(self, tenant_id: int, kb_id: str, what: str) -> KnowledgeBase:
        kb = await self.repos.kbs.get(tenant_id, kb_id) if kb_id else None
        if kb is None:
            raise NotFound(f"{what} knowledge base not found")
        return kb

    async def start(self, tenant_id: int, source_id: str, target_id: str = "", *,
                    task_id: str = "") -> KBTaskProgress:
        """Checks both knowledge bases, creates the target when none is named, and queues the copy."""
        src = await self.knowledge_base(tenant_id, source_id, "Source")
        if src.type != KBType.DOCUMENT:
            raise BadRequest("Only document knowledge bases can be copied")
        dst: KnowledgeBase | None = None
        if target_id:
            dst = await self.knowledge_base(tenant_id, target_id, "Target")
            if dst.id == src.id:
                raise BadRequest("source_id and target_id must differ")
            if dst.type != src.type:
                raise BadRequest("The target knowledge base must be of the source's type")
        task_id = task_id or new_id()
        if await self.progress.get(tenant_id, task_id) is not None:
            raise BadRequest("task_id is already in use")
        if self.quota is not None:  # refused up front when it cannot fit; each document is admitted again
            size = sum(k.file_size for k in await self.completed_documents(tenant_id, src.id))
            await self.quota.check(tenant_id, size, what="a copy of this knowledge base")
        if dst is None:  # only once every check passed: a refused copy leaves no empty knowledge base
            dst = await self.create_copy_of(src)
        p = KBTaskProgress(task_id=task_id, source_id=src.id, target_id=dst.id,
                           message="Task queued, waiting to start")
        return await self.progress.queue(self.jobs, tenant_id, p)

    async def create_copy_of(self, src: KnowledgeBase) -> KnowledgeBase:
        """A new knowledge base with the source's settings, named "<name> (copy)" (or "(copy 2)" …)."""
        name, n = f"{src.name} (copy)", 1
        while await self.repos.kbs.get_by_name(src.tenant_id, name) is not None:
            n += 1
            name = f"{src.name} (copy {n})"
        now = utcnow()
        return await self.repos.kbs.create(src.model_copy(update={
            "id": new_id(), "name": name, "created_at": now, "updated_at": now}, deep=True))

    # --- the job --------------------------------------------------------------------------------------------
    async def run(self, payload: dict[str, Any]) -> None:
        if (opened := await self.progress.open(payload)) is None:
            return
        tenant_id, p = opened
        try:
            await self._copy(tenant_id, p)
        except Exception as exc:  # recorded for the progress route; the job itself is done
            log.exception("knowledge base copy %s failed", p.task_id)
            await self.progress.fail(tenant_id, p, str(exc) or type(exc).__name__, "Copy failed")

    async def give_up(self, payload: dict[str, Any], reason: str) -> None:
        await self.progress.give_up(payload, reason, "Copy failed")

    async def documents(self, tenant_id: int, kb_id: str) -> list[Knowledge]:
        out: list[Knowledge] = []
        page = 1
        while True:
            got = await self.repos.knowledge.list(tenant_id, kb_id, page=page, page_size=_PAGE)
            out.extend(got.items)
            if len(got.items) < _PAGE:
                return out
            page += 1

    async def completed_documents(self, tenant_id: int, kb_id: str) -> list[Knowledge]:
        return [k for k in await self.documents(tenant_id, kb_id) if k.parse_status == ParseStatus.COMPLETED]

    async def _copy(self, tenant_id: int, p: KBTaskProgress) -> None:
        src = await self.knowledge_base(tenant_id, p.source_id, "Source")
        dst = await self.knowledge_base(tenant_id, p.target_id, "Target")
        docs = await self.completed_documents(tenant_id, src.id)
        p.status, p.total, p.message = "processing", len(docs), "Copying documents"
        p.processed = len(p.copied)
        await self.progress.save(tenant_id, p)
        for k in docs:
            if k.id in p.copied:
                continue
            half_done = p.started.get(k.id)
            if half_done:  # a run cut short while writing this copy: start it again
                await self._drop(tenant_id, half_done)
            new_kid = new_id()
            p.started[k.id] = new_kid
            await self.progress.save(tenant_id, p)
            await self.copy_document(k, src, dst, new_kid)
            p.copied[k.id] = new_kid
            p.started.pop(k.id, None)
            p.processed += 1
            await self.progress.save(tenant_id, p)
        p.status, p.progress, p.message = "completed", 100, "Knowledge base copied"
        await self.progress.save(tenant_id, p)

    async def _drop(self, tenant_id: int, knowledge_id: str) -> None:
        k = await self.repos.knowledge.get(tenant_id, knowledge_id)
        engine = self.retrieval()
        if engine is not None:
            await engine.delete_knowledge([knowledge_id])
        if k is not None:
            await self.repos.knowledge.delete(tenant_id, knowledge_id)
            if k.file_path:
                await self.blobs.delete(k.file_path)
            await self.blobs.delete_prefix(image_prefix(k))

    async def chunks(self, tenant_id: int, knowledge_id: str) -> list[Chunk]:
        out: list[Chunk] = []
        page = 1
        while True:
            got = await self.repos.chunks.list(tenant_id, knowledge_id, page=page, page_size=_PAGE)
            out.extend(got.items)
            if len(got.items) < _PAGE:
                return out
            page += 1

    async def copy_document(self, k: Knowledge, src: KnowledgeBase, dst: KnowledgeBase, new_kid: str) -> None:
        now = utcnow()
        copy = k.model_copy(update={
            "id": new_kid, "knowledge_base_id": dst.id, "parse_status": ParseStatus.PROCESSING,
            "tag_id": None, "file_path": "", "created_at": now, "updated_at": now,
            "embedding_model_id": dst.embedding_model_id}, deep=True)
        async with (self.quota.admitting(k.tenant_id, k.file_size, repr(k.file_name or k.title))
                    if self.quota is not None else contextlib.nullcontext()):
            if k.file_path:
                data = await self.blobs.get(k.file_path)
                copy.file_path = await self.blobs.put(
                    f"{k.tenant_id}/{dst.id}/{new_kid}/{k.file_name or 'original'}", data)
            await self.repos.knowledge.create(copy)
        chunks = await self.chunks(k.tenant_id, k.id)
        ids = {c.id: new_id() for c in chunks}

        def remap(cid: str | None) -> str | None:
            return ids.get(cid, cid) if cid else cid

        await copy_images(self.blobs, k, copy, stored_names(k, chunks))
        new_chunks = [c.model_copy(update={
            "id": ids[c.id], "knowledge_id": new_kid, "knowledge_base_id": dst.id, "tag_id": None,
            "parent_chunk_id": remap(c.parent_chunk_id), "pre_chunk_id": remap(c.pre_chunk_id),
            "next_chunk_id": remap(c.next_chunk_id), "image_info": with_urls_of(c, k.id, new_kid),
            "created_at": now, "updated_at": now}, deep=True)
            for c in chunks]
        engine = self.retrieval()
        if engine is not None:
            rows = await self.rows_for(engine, [k.id], src, dst)
            moved = []
            for r in rows:
                new_cid = ids.get(r.chunk_id)
                if new_cid is None:
                    continue  # a row of a chunk that no longer exists
                suffix = r.source_id[len(r.chunk_id):] if r.source_id.startswith(r.chunk_id) else ""
                moved.append(r.model_copy(update={"source_id": new_cid + suffix, "chunk_id": new_cid,
                                                  "knowledge_id": new_kid, "knowledge_base_id": dst.id,
                                                  "tag_id": None}))
            await engine.index(moved)
        await self.repos.chunks.replace_for_knowledge(new_kid, new_chunks, complete={
            "parse_status": str(ParseStatus.COMPLETED), "processed_at": now})

    async def rows_for(self, engine: RetrievalEngine, knowledge_ids: Sequence[str], src: KnowledgeBase,
                       dst: KnowledgeBase) -> list[IndexRow]:
        """The documents' index rows, with vectors for ``dst``: the stored ones when both knowledge bases
        embed with the same model, else embedded again with ``dst``'s (none when ``dst`` keeps no
        vectors)."""
        if isinstance(engine, StoredRows):
            rows = await engine.rows_for_knowledge(knowledge_ids)
        else:  # an engine that cannot hand its rows back: rebuilt from the chunks, embedded again below
            rows = await self._rows_from_chunks(src.tenant_id, knowledge_ids, src)
            src = src.model_copy(update={"embedding_model_id": "\0unknown"})
        if not dst.indexing_strategy.vector_enabled:
            return [r.model_copy(update={"embedding": None}) for r in rows]
        same = src.embedding_model_id == dst.embedding_model_id and src.indexing_strategy.vector_enabled
        todo = [i for i, r in enumerate(rows) if not same or r.embedding is None]
        if todo:
            batcher = await self.embedders.batcher(dst.embedding_model_id or None, tenant_id=dst.tenant_id)
            vectors = await batcher.embed([rows[i].content for i in todo])
            for i, v in zip(todo, vectors, strict=True):
                rows[i] = rows[i].model_copy(update={"embedding": v.tolist()})
        return rows

    async def _rows_from_chunks(self, tenant_id: int, knowledge_ids: Sequence[str],
                                kb: KnowledgeBase) -> list[IndexRow]:
        rows: list[IndexRow] = []
        for kid in knowledge_ids:
            k = await self.repos.knowledge.get(tenant_id, kid)
            if k is None:
                continue
            for c in await self.chunks(tenant_id, kid):
                if c.chunk_type in SEARCHABLE_CHUNK_TYPES:
                    rows.append(IndexRow(source_id=c.id, chunk_id=c.id, knowledge_id=kid,
                                         knowledge_base_id=kb.id, tenant_id=tenant_id,
                                         content=c.index_content(k.title), tag_id=c.tag_id,
                                         is_enabled=c.is_enabled))
        return rows
