"""Editing and deleting single chunks; an edited chunk is re-embedded and re-indexed at once."""

from __future__ import annotations

import builtins
import hashlib
from typing import Any

from knora.domain.errors import BadRequest, Conflict, NotFound
from knora.domain.knowledge import SEARCHABLE_CHUNK_TYPES, Chunk, ChunkRevision, Knowledge
from knora.domain.search import IndexRow
from knora.ports.store import Page
from knora.services.ingest.service import IngestDeps

EDITABLE = frozenset({"content", "chunk_index", "is_enabled", "start_at", "end_at", "image_info"})


class ChunkService:
    def __init__(self, deps: IngestDeps) -> None:
        self.d = deps

    async def _knowledge(self, tenant_id: int, knowledge_id: str) -> Knowledge:
        k = await self.d.repos.knowledge.get(tenant_id, knowledge_id)
        if k is None:
            raise NotFound("Knowledge not found")
        return k

    async def list(self, tenant_id: int, knowledge_id: str, *, page: int, page_size: int,
                   chunk_types: list[str] | None) -> Page:
        await self._knowledge(tenant_id, knowledge_id)
        return await self.d.repos.chunks.list(tenant_id, knowledge_id, page=page, page_size=page_size,
                                              chunk_types=chunk_types or None)

    async def get(self, tenant_id: int, knowledge_id: str, chunk_id: str) -> Chunk:
        chunk = await self.d.repos.chunks.get(tenant_id, chunk_id)
        if chunk is None or chunk.knowledge_id != knowledge_id:
            raise NotFound("Chunk not found")
        return chunk

    async def get_by_id(self, tenant_id: int, chunk_id: str) -> Chunk:
        chunk = await self.d.repos.chunks.get(tenant_id, chunk_id)
        if chunk is None:
            raise NotFound("Chunk not found")
        return chunk

    async def update(self, tenant_id: int, knowledge_id: str, chunk_id: str, changes: dict[str, Any],
                     *, expected_revision: int | None = None, edit_source: str = "manual") -> Chunk:
        """``expected_revision``: the ``content_revision`` the editor saw; another edit since is a 409.
        A content change keeps the previous content as a revision (``GET …/revisions``)."""
        k = await self._knowledge(tenant_id, knowledge_id)
        chunk = await self.get(tenant_id, knowledge_id, chunk_id)
        if expected_revision is not None and expected_revision != chunk.content_revision:
            raise Conflict("Chunk was modified by another edit; refresh and retry")
        changes = {key: v for key, v in changes.items() if key in EDITABLE and v is not None}
        if "content" in changes and (not isinstance(changes["content"],
                                                    str) or not changes["content"].strip()):
            raise BadRequest("content must be a non-empty string")
        content_changed = "content" in changes and changes["content"] != chunk.content
        updated = chunk.model_copy(update=changes)
        if content_changed:
            updated.content_revision = chunk.content_revision + 1
            updated.content_hash = hashlib.sha256(updated.content.encode()).hexdigest()
        engine = self.d.retrieval()
        if content_changed and engine is not None and updated.chunk_type in SEARCHABLE_CHUNK_TYPES:
            kb = await self.d.repos.kbs.get(tenant_id, k.knowledge_base_id)
            text = updated.index_content(k.title)
            vector = None
            if kb is None or kb.indexing_strategy.vector_enabled:
                batcher = await self.d.embedders.batcher(kb.embedding_model_id if kb else None,
                                                         tenant_id=tenant_id)
                vector = (await batcher.embed([text]))[0]
            await engine.index([IndexRow(
                source_id=updated.id, chunk_id=updated.id, knowledge_id=k.id,
                knowledge_base_id=k.knowledge_base_id,
                tenant_id=tenant_id, content=text, tag_id=updated.tag_id, is_enabled=updated.is_enabled,
                embedding=vector.tolist() if vector is not None else None,
                knowledge_type="faq" if kb is not None and kb.type == "faq" else "document")])
        if content_changed:
            await self.d.repos.chunk_revisions.add(ChunkRevision(
                tenant_id=tenant_id, knowledge_base_id=chunk.knowledge_base_id,
                knowledge_id=chunk.knowledge_id, chunk_id=chunk.id, revision=chunk.content_revision,
                content=chunk.content, is_enabled=chunk.is_enabled, edit_source=edit_source,
                edited_at=chunk.updated_at))
        saved = await self.d.repos.chunks.update(updated)
        if engine is not None and "is_enabled" in changes and changes["is_enabled"] != chunk.is_enabled:
            await engine.set_enabled([chunk.id], bool(changes["is_enabled"]))
        return saved

    async def delete(self, tenant_id: int, knowledge_id: str, chunk_id: str) -> None:
        await self.get(tenant_id, knowledge_id, chunk_id)
        await self.d.repos.chunks.delete(tenant_id, chunk_id)
        engine = self.d.retrieval()
        if engine is not None:
            await engine.delete_chunks([chunk_id])

    async def delete_all(self, tenant_id: int, knowledge_id: str) -> None:
        await self._knowledge(tenant_id, knowledge_id)
        ids = await self.d.repos.chunks.replace_for_knowledge(knowledge_id, [])
        engine = self.d.retrieval()
        if engine is not None and ids:
            await engine.delete_chunks(ids)

    async def revisions(self, tenant_id: int, knowledge_id: str,
                        chunk_id: str) -> builtins.list[ChunkRevision]:
        await self._knowledge(tenant_id, knowledge_id)
        chunk = await self.get(tenant_id, knowledge_id, chunk_id)
        return await self.d.repos.chunk_revisions.list(tenant_id, chunk.id)

    async def revert(self, tenant_id: int, knowledge_id: str, chunk_id: str, revision: int, *,
                     expected_revision: int | None = None) -> Chunk:
        """Makes an earlier content current again, as a new edit (so the content reverted from is kept)."""
        chunk = await self.get(tenant_id, knowledge_id, chunk_id)
        if revision == chunk.content_revision:
            if expected_revision is not None and expected_revision != chunk.content_revision:
                raise Conflict("Chunk was modified by another edit; refresh and retry")
            return chunk
        rev = await self.d.repos.chunk_revisions.get(tenant_id, chunk.id, revision)
        if rev is None:
            raise NotFound(f"Revision {revision} of this chunk not found")
        return await self.update(tenant_id, knowledge_id, chunk_id, {"content": rev.content},
                                 expected_revision=expected_revision, edit_source="revert")
