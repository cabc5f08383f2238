"""What the plugins need from the rest of Knora, as small Protocols (wiring fills them from the container).

Plugins are built once per container with these; per-turn data lives in ``ChatManage``. Every dependency but
the model resolvers is optional so a plugin degrades (skips) instead of crashing when an area is not wired.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase
from knora.domain.search import SearchResult
from knora.ports.chat import ChatModel
from knora.ports.graph import GraphStore
from knora.ports.reranker import Reranker
from knora.ports.websearch import WebSearch


class ChatModels(Protocol):
    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> ChatModel: ...


class Rerankers(Protocol):
    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Reranker | None: ...


class SearchService(Protocol):
    """``c.search_service`` (retrieval area)."""

    async def search(self, tenant_id: int, params: Any) -> list[SearchResult]: ...


class Reads(Protocol):
    """Batch reads (the retrieval area's ``SearchStore`` port): tenant-agnostic, callers filter by tenant."""

    async def knowledge_bases(self, kb_ids: Sequence[str]) -> list[KnowledgeBase]: ...

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
    graph_store: GraphStore | None = None
    fetch_page: Fetcher | None = None
    read_blob: BlobReader | None = None
    list_documents: DocumentLister | None = None
    list_kbs: Callable[[int], Awaitable[list[KnowledgeBase]]] | None = None  # tenant -> its KBs ("all" mode)
