from __future__ import annotations

from collections.abc import Sequence
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
