"""What the plugins need from the rest of Knora, as small Protocols (the composition root fills them).

Plugins are built once per process with these; per-turn data lives in ``ChatManage``. Every dependency but
the model resolvers is optional so a plugin degrades (skips) instead of crashing when an area is not wired.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.ports.chat import ChatModels
from knora.ports.graph import GraphStore
from knora.ports.reranker import Rerankers
from knora.ports.search_store import SearchService
from knora.ports.sql_sandbox import SqlSandbox
from knora.ports.websearch import TenantWebSearch, WebSearch


class Reads(Protocol):
    """Batch reads (the retrieval area's ``SearchStore`` port): tenant-agnostic, callers filter by tenant."""

    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]: ...

    async def shared_kb_ids(self, tenant_id: int, kb_ids: Sequence[str]) -> set[str]: ...

    async def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    async def knowledge(self, knowledge_ids: Sequence[str]) -> list[Knowledge]: ...


class DocumentLister(Protocol):
    async def __call__(self, tenant_id: int, kb_id: str, limit: int) -> list[Knowledge]: ...


Fetcher = Callable[[str], Awaitable[str]]  # URL -> page text ("" when nothing usable)
BlobReader = Callable[[str], Awaitable[bytes]]  # blob key (knowledge.file_path) -> bytes


@dataclass
class PipelineDeps:
    chat_models: ChatModels
    rerankers: Rerankers
    search: SearchService | None = None
    reads: Reads | None = None
    web_search: WebSearch | None = None
    web_searches: TenantWebSearch | None = None  # a tenant's default provider (/web-search-providers)
    graph_store: GraphStore | None = None
    fetch_page: Fetcher | None = None
    read_blob: BlobReader | None = None
    list_documents: DocumentLister | None = None
    list_kbs: Callable[[int], Awaitable[list[KnowledgeBase]]] | None = None  # tenant -> its KBs ("all" mode)
    sql: SqlSandbox | None = None  # runs the data-analysis step's SQL over a table file (None: step skipped)
