"""The RetrievalEngine port: index rows in, scored hits out. One contract suite tests every engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from knora.domain.search import EngineHit, IndexRow

Capability = Literal["vector", "keyword"]


class EngineQuery(BaseModel):
    mode: Capability
    knowledge_base_ids: list[str]
    knowledge_ids: list[str] = Field(default_factory=list)  # empty = all
    tag_ids: list[str] = Field(default_factory=list)
    text: str = ""  # keyword mode: the raw query (the engine tokenises it as it tokenised the rows)
    embedding: list[float] | None = None  # vector mode
    top_k: int = 50
    threshold: float = 0.0  # drop hits scoring below (vector: cosine; keyword: normalised score)
    knowledge_type: str = "document"  # document | faq
    only_recommended: bool = False


@runtime_checkable
class RetrievalEngine(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[Capability]: ...

    async def start(self) -> None:
        """Create the engine's own schema/indexes if missing; load caches."""
        ...

    async def close(self) -> None: ...

    async def index(self, rows: Sequence[IndexRow]) -> None:
        """Upsert rows by source_id. Must be atomic per call: all rows visible or none."""
        ...

    async def delete_chunks(self, chunk_ids: Sequence[str]) -> None: ...

    async def delete_knowledge(self, knowledge_ids: Sequence[str]) -> None: ...

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None: ...

    async def set_enabled(self, chunk_ids: Sequence[str], enabled: bool) -> None: ...

    async def search(self, query: EngineQuery) -> list[EngineHit]:
        """Best first; at most top_k hits; several rows of one chunk may come back (callers de-duplicate)."""
        ...


@runtime_checkable
class StoredRows(Protocol):
    """An engine that can hand back the rows it holds (with their stored vectors), so that a copy or a move
    of documents re-indexes them elsewhere without embedding the text again. Optional: a copy falls back to
    re-embedding on an engine without it."""

    async def rows_for_knowledge(self, knowledge_ids: Sequence[str]) -> list[IndexRow]: ...
