"""What WeKnora's document list does to several documents at once, and the edits it makes to one beyond
``IngestService.edit``: search across the tenant's knowledge bases, batch delete / re-parse / tags, editing a
manual Markdown entry, and cancelling a parse.

Batch operations are all-or-nothing on their ids: every id must name a document of the knowledge base the
request names (of the caller's tenant), or nothing is done and the answer is a 404 naming the first that does
not — an id of another tenant is indistinguishable from an unknown one. WeKnora runs them as background tasks
and answers a task id; Knora's are done when the answer comes (a re-parse is queued, as a single one is), and
the task id is an id of its own so that the UI has something to show.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from knora.domain.common import new_id, safe_name
from knora.domain.errors import BadRequest, NotFound
from knora.domain.knowledge import Knowledge, ParseStatus
from knora.services.ingest.process_config import ProcessOverrides
from knora.services.ingest.service import IngestService

# The most ids one batch request may name (WeKnora chunks its batches at 1,000 too).
MAX_BATCH = 1000
MAX_SEARCH_LIMIT = 100


@dataclass(frozen=True)
class SearchPage:
    items: list[Knowledge]
    total: int
    has_more: bool


@dataclass(frozen=True)
class BatchDone:
    task_id: str
    count: int


class KnowledgeBatchService:
    """Over ``IngestService``: each operation here is one of its single-document paths, repeated or
    extended, so that a batch behaves exactly as that many single requests would."""

    def __init__(self, ingest: IngestService) -> None:
        self.ingest = ingest
        self.repos = ingest.d.repos

    async def search(self, tenant_id: int, keyword: str, file_types: Sequence[str], *, offset: int,
                     limit: int) -> SearchPage:
        if offset < 0:
            raise BadRequest("offset must be 0 or more")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise BadRequest(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        found = await self.repos.knowledge.search(tenant_id, keyword=keyword.strip(),
                                                  file_types=[t for t in file_types if t],
                                                  offset=offset, limit=limit)
        return SearchPage(items=list(found.items), total=found.total,
                          has_more=offset + len(found.items) < found.total)

    async def _documents_of(self, tenant_id: int, kb_id: str, ids: Sequence[str]) -> list[Knowledge]:
        """The documents ``ids`` name, all of knowledge base ``kb_id`` of this tenant, or a 4xx."""
        if not ids:
            raise BadRequest("ids cannot be empty")
        if len(ids) > MAX_BATCH:
            raise BadRequest(f"at most {MAX_BATCH} ids per request")
        if await self.repos.kbs.get(tenant_id, kb_id) is None:
            raise NotFound("Knowledge base not found")
        docs: list[Knowledge] = []
        for kid in dict.fromkeys(ids):  # once each, in the order given
            k = await self.repos.knowledge.get(tenant_id, kid)
            if k is None or k.knowledge_base_id != kb_id:
                raise NotFound(f"Knowledge {kid} not found in this knowledge base")
            docs.append(k)
        return docs

    async def delete(self, tenant_id: int, kb_id: str, ids: Sequence[str]) -> BatchDone:
        docs = await self._documents_of(tenant_id, kb_id, ids)
        for k in docs:
            await self.ingest.delete(tenant_id, k.id)
        return BatchDone(task_id=new_id(), count=len(docs))

    async def reparse(self, tenant_id: int, kb_id: str, ids: Sequence[str], *,
                      process_config: ProcessOverrides | None = None) -> BatchDone:
        docs = await self._documents_of(tenant_id, kb_id, ids)
        for k in docs:
            await self.ingest.reparse(tenant_id, k.id, process_config=process_config)
        return BatchDone(task_id=new_id(), count=len(docs))

    async def set_tags(self, tenant_id: int, updates: Mapping[str, Sequence[str]],
                       kb_id: str | None = None) -> int:
        """``updates``: document id → its tags. A Knora document has one tag, so the first is kept and an
        empty list removes it; more than one is refused rather than silently dropped."""
        if not updates:
            raise BadRequest("updates cannot be empty")
        if len(updates) > MAX_BATCH:
            raise BadRequest(f"at most {MAX_BATCH} documents per request")
        if kb_id is not None and await self.repos.kbs.get(tenant_id, kb_id) is None:
            raise NotFound("Knowledge base not found")
        docs: list[tuple[Knowledge, str | None]] = []
        for kid, tags in updates.items():
            if len(tags) > 1:
                raise BadRequest(f"a document has at most one tag in Knora ({kid} was given {len(tags)})")
            k = await self.repos.knowledge.get(tenant_id, kid)
            if k is None or (kb_id is not None and k.knowledge_base_id != kb_id):
                raise NotFound(f"Knowledge {kid} not found")
            tag_id = tags[0] if tags and tags[0] else None
            if tag_id is not None:
                tag = await self.repos.tags.get(tenant_id, tag_id)
                if tag is None or tag.knowledge_base_id != k.knowledge_base_id:
                    raise BadRequest(f"tag {tag_id} is not a tag of the knowledge base of {kid}")
            docs.append((k, tag_id))
        for k, tag_id in docs:
            await self.ingest.edit(tenant_id, k.id, set_tag=True, tag_id=tag_id)
        return len(docs)

    async def update_manual(self, tenant_id: int, knowledge_id: str, *, title: str | None, content: str,
                            status: str) -> Knowledge:
        """A manual entry's new title and Markdown, stored as its original and parsed again (a draft is
        stored only, as when it is created: its chunks leave the index until it is published)."""
        k = await self.ingest.get(tenant_id, knowledge_id)
        if k.type != "manual":
            raise BadRequest("Only a manual entry can be edited this way")
        if not content.strip():
            raise BadRequest("content must not be empty")
        data = content.encode()
        limit = self.ingest.d.settings.max_upload_bytes
        if len(data) > limit:
            raise BadRequest(f"content is {len(data)} bytes; the limit is {limit} bytes")
        await self.ingest.quota.check(tenant_id, len(data), counted=k.file_size, what="the edited entry")
        new_title = k.title if title is None else title.strip()
        name = (safe_name(new_title) or "manual")[:120] + ".md"
        path = await self.ingest.d.blobs.put(f"{k.tenant_id}/{k.knowledge_base_id}/{k.id}/{name}", data)
        if k.file_path and k.file_path != path:
            await self.ingest.d.blobs.delete(k.file_path)
        await self.repos.knowledge.update(k.model_copy(update={
            "title": new_title, "file_name": name, "file_path": path, "file_size": len(data),
            "file_hash": hashlib.sha256(data).hexdigest(), "metadata": {**k.metadata, "status": status}}))
        if status != "draft":
            return await self.ingest.reparse(tenant_id, k.id)
        await self.ingest.stop_parse(k.id)
        await self._unindex(k.id)
        return await self.ingest.get(tenant_id, k.id)

    async def _unindex(self, knowledge_id: str) -> None:
        await self.repos.chunks.replace_for_knowledge(knowledge_id, [])
        await self.repos.knowledge.set_status(knowledge_id, ParseStatus.PENDING)
        engine = self.ingest.d.retrieval()
        if engine is not None:
            await engine.delete_knowledge([knowledge_id])

    async def cancel_parse(self, tenant_id: int, knowledge_id: str) -> Knowledge:
        """Stops a pending or running parse: the document ends ``cancelled`` (its queued job then does
        nothing) and a running parse is stopped. Chunks already committed stay; a re-parse starts over."""
        k = await self.ingest.get(tenant_id, knowledge_id)
        if not await self.repos.knowledge.cancel(k.id, "Parse cancelled"):
            now = await self.ingest.get(tenant_id, knowledge_id)
            raise BadRequest(f"Only a pending or processing parse can be cancelled (this one is "
                             f"{now.parse_status})")
        await self.ingest.stop_parse(k.id)  # here; on another replica its commit is refused instead
        return await self.ingest.get(tenant_id, k.id)
