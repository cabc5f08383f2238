"""Read-only persistence the retrieval area needs: KBs to authorise, chunks and documents to hydrate hits.

The SQLAlchemy implementation is ``knora/adapters/db/repos/search_reads.py``; tests may pass any object with
these methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.domain.search import SearchParams, SearchResult


@runtime_checkable
class SearchStore(Protocol):
    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]:
        """Tenant-agnostic on purpose: the service decides what a caller may see (404 for foreign KBs)."""
        ...

    async def tenant_retrieval_config(self, tenant_id: int) -> dict[str, Any]: ...

    async def shared_kb_ids(self, tenant_id: int, kb_ids: Sequence[str]) -> set[str]:
        """The knowledge bases among ``kb_ids`` shared with ``tenant_id`` (another tenant's, any permission).
        Never cached: a revoked share stops working at once."""
        ...

    async def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    async def knowledge(self, knowledge_ids: Sequence[str]) -> list[Knowledge]: ...

    async def knowledge_ids_with_tags(self, kb_id: str, tag_ids: Sequence[str]) -> list[str]: ...

    async def tag_kbs(self, tag_ids: Sequence[str]) -> dict[str, str]:
        """tag id → its knowledge base id (for tag scopes given without a KB)."""
        ...


@runtime_checkable
class SearchService(Protocol):
    """Hybrid search as the pipeline and the agent's tools see it (``knora/services/retrieval/hybrid.py``)."""

    async def search(self, tenant_id: int, params: SearchParams) -> list[SearchResult]: ...
