from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors. Implementations batch and run inference off the event
    loop."""

    @property
    def model_id(self) -> str:
        """Stable key of the model (provider:name); KBs searched together must share it."""
        ...

    @property
    def dimension(self) -> int: ...

    async def embed_passages(self, texts: Sequence[str]) -> Vector:
        """Shape (len(texts), dimension)."""
        ...

    async def embed_query(self, text: str) -> Vector:
        """Shape (dimension,)."""
        ...


@runtime_checkable
class BackgroundCopyable(Protocol):
    """An embedder that computes on this machine's CPU: ingestion gets an instance of its own that embeds
    passages on ``lane`` (a low-priority worker process or thread), so a user's query never waits behind an
    upload."""

    def background_copy(self, lane: Executor) -> Embedder: ...
