from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel


class RerankScore(BaseModel):
    index: int  # position in the input list
    score: float


@runtime_checkable
class Reranker(Protocol):
    @property
    def model_id(self) -> str: ...

    async def rerank(self, query: str, documents: Sequence[str],
                     top_n: int | None = None) -> list[RerankScore]:
        """Scores sorted best first."""
        ...


@runtime_checkable
class Rerankers(Protocol):
    """Resolves a reranker by id; ``None`` when none is configured (the stage is skipped, spec §2.4)."""

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> Reranker | None: ...

    async def close(self) -> None: ...
