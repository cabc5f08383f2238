from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class BlobStore(Protocol):
    """Uploaded originals (and small task records), addressed by an opaque ``/``-separated key that Knora
    builds (``tenant/kb/knowledge/<safe name>``). Implementations: ``knora.adapters.blobs.registry``.

    The contract every store keeps (``tests/adapters/blobs/test_contract.py``): a ``put`` is whole or absent
    (a reader never sees half an object; concurrent writers of one key leave one of their values), ``get`` of
    a missing key raises ``KeyError``, ``delete`` of a missing key is a no-op, and a key with a ``.``/``..``
    part, an empty part or a part that :func:`knora.domain.common.safe_name` would change raises
    ``ValueError`` in every store alike.
    """

    async def put(self, key: str, data: bytes) -> str: ...

    async def get(self, key: str) -> bytes: ...

    async def exists(self, key: str) -> bool: ...

    async def delete(self, key: str) -> None: ...

    async def delete_prefix(self, prefix: str) -> None:
        """Removes every blob under ``prefix`` (a knowledge base's uploads): keys ``prefix/...``."""
        ...

    async def keys(self, prefix: str) -> list[str]:
        """The keys of every blob under ``prefix`` (keys ``prefix/...``), written one way (``a/b``), sorted;
        ``knora blobs migrate`` copies a knowledge base's originals and images by them."""
        ...

    async def close(self) -> None:
        """Releases connections (a no-op for the local directory)."""
        ...
