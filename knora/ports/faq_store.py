"""FAQ entries as the FAQ service sees them: chunks of a FAQ knowledge base, numbered by a per-KB sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from knora.domain.knowledge import Chunk, Knowledge


@runtime_checkable
class FaqRepo(Protocol):
    async def holder(self, tenant_id: int, kb_id: str, knowledge_id: str | None = None) -> Knowledge:
        """The document FAQ entries of a knowledge base hang under (created on first use)."""
        ...

    async def next_seq(self, kb_id: str) -> int: ...

    async def page(self, tenant_id: int, kb_id: str, *, page: int, page_size: int, keyword: str = "",
                   tag_id: str | None = None) -> tuple[list[Chunk], int]: ...

    async def all(self, tenant_id: int, kb_id: str) -> list[Chunk]: ...

    async def get(self, tenant_id: int, kb_id: str, seq_id: int) -> Chunk | None: ...

    async def save(self, chunks: Sequence[Chunk]) -> None: ...

    async def delete(self, tenant_id: int, kb_id: str, seq_ids: Sequence[int] | None) -> list[str]:
        """Removes the entries (all when ``seq_ids`` is None); returns the removed chunk ids."""
        ...
