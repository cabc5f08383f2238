"""Moving documents to another knowledge base of the tenant (WeKnora's ``POST /knowledge/move``).

A move is a job (kind ``knowledge_move``) over the documents named, one at a time; each keeps its id. Mode
``reuse_vectors`` (both knowledge bases embed with the same model) re-indexes the document's stored rows
under the target and re-labels its chunks, so it is searchable in the target, and no longer in the source,
as soon as its step is done. Mode ``reparse`` takes the document out of the index, moves it and queues an
ordinary re-parse with the target's chunking and embedding. Either way the original file moves to the
target's storage folder, so deleting the source knowledge base later leaves it alone, and the document's
tag (a tag belongs to one knowledge base) is dropped. A step is safe to run twice, so a job cut short by a
restart simply runs again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from knora.domain.common import new_id, utcnow
from knora.domain.errors import BadRequest, NotFound
from knora.domain.knowledge import KBType, Knowledge, KnowledgeBase, ParseStatus
from knora.services.ingest.images import copy_images, image_prefix, stored_names
from knora.services.kb.copy import KBCopyService
from knora.services.kb.tasks import KBTaskProgress, TaskProgressStore

log = logging.getLogger(__name__)

JOB_KIND = "knowledge_move"
MODES = ("reuse_vectors", "reparse")
_BUSY = (ParseStatus.PENDING, ParseStatus.PROCESSING)


class KnowledgeMoveService:
    def __init__(self, copies: KBCopyService,
                 reparse: Callable[[int, str], Awaitable[Knowledge]]) -> None:
        self.c = copies
        self.reparse = reparse
        self.progress = TaskProgressStore(copies.blobs, JOB_KIND)

    @staticmethod
    def same_embedder(a: KnowledgeBase, b: KnowledgeBase) -> bool:
        return a.embedding_model_id == b.embedding_model_id

    async def targets(self, tenant_id: int, kb_id: str) -> list[KnowledgeBase]:
        """The tenant's other document knowledge bases (none for an FAQ one: FAQ entries do not move)."""
        src = await self.c.knowledge_base(tenant_id, kb_id, "The")
        if src.type != KBType.DOCUMENT:
            return []
        return [kb for kb in await self.c.repos.kbs.list(tenant_id)
                if kb.id != src.id and kb.type == src.type]

    async def start(self, tenant_id: int, knowledge_ids: Sequence[str], source_kb_id: str,
                    target_kb_id: str, mode: str) -> KBTaskProgress:
        if mode not in MODES:
            raise BadRequest("mode must be 'reuse_vectors' or 'reparse'")
        if not knowledge_ids:
            raise BadRequest("knowledge_ids must name at least one document")
        src = await self.c.knowledge_base(tenant_id, source_kb_id, "Source")
        dst = await self.c.knowledge_base(tenant_id, target_kb_id, "Target")
        if src.id == dst.id:
            raise BadRequest("source_kb_id and target_kb_id must differ")
        if src.type != KBType.DOCUMENT or dst.type != KBType.DOCUMENT:
            raise BadRequest("Only documents of document knowledge bases can be moved")
        if mode == "reuse_vectors" and not (self.same_embedder(src, dst)
                                            and dst.indexing_strategy.vector_enabled
                                            == src.indexing_strategy.vector_enabled):
            raise BadRequest("reuse_vectors needs both knowledge bases to embed with the same model; "
                             "use mode 'reparse'")
        ids = list(dict.fromkeys(knowledge_ids))
        for kid in ids:
            k = await self.c.repos.knowledge.get(tenant_id, kid)
            if k is None or k.knowledge_base_id != src.id:
                raise NotFound(f"Knowledge {kid} not found in this knowledge base")
            if k.parse_status in _BUSY:
                raise BadRequest(f"Knowledge {kid} is being parsed; move it when it is done")
            if mode == "reuse_vectors" and k.parse_status != ParseStatus.COMPLETED:
                raise BadRequest(f"Knowledge {kid} has no index to reuse; use mode 'reparse'")
        p = KBTaskProgress(task_id=new_id(), source_id=src.id, target_id=dst.id, mode=mode,
                           knowledge_ids=ids, total=len(ids), message="Task queued, waiting to start")
        return await self.progress.queue(self.c.jobs, tenant_id, p)

    # --- the job --------------------------------------------------------------------------------------------
    async def run(self, payload: dict[str, Any]) -> None:
        if (opened := await self.progress.open(payload)) is None:
            return
        tenant_id, p = opened
        try:
            src = await self.c.knowledge_base(tenant_id, p.source_id, "Source")
            dst = await self.c.knowledge_base(tenant_id, p.target_id, "Target")
        except NotFound as exc:
            await self.progress.fail(tenant_id, p, str(exc), "Move failed")
            return
        p.status, p.message = "processing", "Moving documents"
        await self.progress.save(tenant_id, p)
        for kid in p.knowledge_ids:
            if kid in p.copied:
                continue
            try:
                await self._move(tenant_id, kid, src, dst, p.mode)
            except Exception as exc:  # one document's failure is counted; the others still move
                log.exception("moving knowledge %s failed", kid)
                p.failed += 1
                p.error = str(exc) or type(exc).__name__
            p.copied[kid] = kid
            p.processed += 1
            await self.progress.save(tenant_id, p)
        p.progress = 100
        p.status = "failed" if p.failed == p.total else "completed"
        p.message = (f"Moved {p.total - p.failed} of {p.total} documents" if p.failed
                     else "Documents moved")
        await self.progress.save(tenant_id, p)

    async def give_up(self, payload: dict[str, Any], reason: str) -> None:
        await self.progress.give_up(payload, reason, "Move failed")

    async def _move(self, tenant_id: int, kid: str, src: KnowledgeBase, dst: KnowledgeBase,
                    mode: str) -> None:
        k = await self.c.repos.knowledge.get(tenant_id, kid)
        if k is None:
            raise NotFound(f"Knowledge {kid} not found")
        if k.knowledge_base_id not in (src.id, dst.id):
            raise BadRequest(f"Knowledge {kid} is no longer in the source knowledge base")
        engine = self.c.retrieval()
        if mode == "reuse_vectors":
            if engine is not None:
                rows = await self.c.rows_for(engine, [kid], src, dst)
                await engine.index([r.model_copy(update={"knowledge_base_id": dst.id, "tag_id": None})
                                    for r in rows])
            chunks = await self.c.chunks(tenant_id, kid)
            # rewriting the chunk rows (same ids) takes their revisions with them: kept and put back
            revisions = await self.c.repos.chunk_revisions.for_knowledge(tenant_id, kid)
            await self.c.repos.chunks.replace_for_knowledge(kid, [
                ch.model_copy(update={"knowledge_base_id": dst.id, "tag_id": None}) for ch in chunks])
            for rev in revisions:
                await self.c.repos.chunk_revisions.add(rev.model_copy(update={"knowledge_base_id": dst.id}))
        elif engine is not None:
            await engine.delete_knowledge([kid])
        moved = k.model_copy(update={"knowledge_base_id": dst.id, "tag_id": None,
                                     "embedding_model_id": dst.embedding_model_id, "updated_at": utcnow()})
        old_path = k.file_path
        if old_path and not old_path.startswith(f"{tenant_id}/{dst.id}/"):
            data = await self.c.blobs.get(old_path)
            moved.file_path = await self.c.blobs.put(
                f"{tenant_id}/{dst.id}/{kid}/{k.file_name or 'original'}", data)
        if image_prefix(moved) != image_prefix(k):  # the images follow (same document id: same URLs)
            await copy_images(self.c.blobs, k, moved, stored_names(k, await self.c.chunks(tenant_id, kid)))
        await self.c.repos.knowledge.update(moved)
        if old_path and moved.file_path != old_path:
            await self.c.blobs.delete(old_path)
        if image_prefix(moved) != image_prefix(k):
            await self.c.blobs.delete_prefix(image_prefix(k))
        if mode == "reparse":
            await self.reparse(tenant_id, kid)
