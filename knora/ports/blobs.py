from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class BlobStore(Protocol):
    """Uploaded originals, addressed by an opaque key."""

    async def put(self, key: str, data: bytes) -> str: ...

    async def get(self, key: str) -> bytes: ...

    async def delete(self, key: str) -> None: ...

    async def delete_prefix(self, prefix: str) -> None:
        """Removes every blob under ``prefix`` (a knowledge base's uploads)."""
        ...
