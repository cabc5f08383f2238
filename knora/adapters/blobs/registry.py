"""Blob stores by name (``settings.blob_store``): where uploaded originals live.

``local`` (the embedded default) is one process's directory; ``s3`` and ``postgres`` are shared by every
replica. Entries are import strings, so the embedded profile never imports boto3, and settings can check a
name without importing any store.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from knora.domain.registry import Registry
from knora.ports.blobs import BlobStore
from knora.settings import Settings

# (settings, the metadata store's engine) -> store; only ``postgres`` uses the engine
BlobStoreFactory = Callable[[Settings, AsyncEngine], BlobStore]

def _local(settings: Settings, engine: AsyncEngine) -> BlobStore:
    from knora.adapters.blobs.local import LocalBlobStore

    del engine
    return LocalBlobStore(settings.data_dir / "blobs")


BLOB_STORES: Registry[BlobStoreFactory] = Registry("blob store", {
    "local": _local,
    "s3": "knora.adapters.blobs.s3:build",
    "postgres": "knora.adapters.blobs.postgres:build",
})

# Stores every replica sees; ``knora serve`` refuses several-replica settings with any other.
SHARED = frozenset({"s3", "postgres"})


def build_blob_store(settings: Settings, engine: AsyncEngine) -> BlobStore:
    """The configured store; ValueError (listing the known names) for an unknown one."""
    return BLOB_STORES.get(settings.blob_store)(settings, engine)


def replica_problem(settings: Settings) -> str | None:
    """Why these settings cannot serve several replicas, or None.

    Several replicas (``Settings.several_replicas``: ``KNORA_REPLICAS`` > 1, or a shared stream log or job
    queue) with a blob store only one machine sees would fail every upload whose job another replica claims
    ("The uploaded original is missing from the blob store")."""
    if not settings.several_replicas or settings.blob_store in SHARED:
        return None
    why = (f"KNORA_REPLICAS={settings.replicas}" if settings.replicas is not None else
           f"KNORA_STREAM_LOG={settings.stream_log}, KNORA_JOB_QUEUE={settings.job_queue}")
    return (f"these settings run several replicas ({why}) but KNORA_BLOB_STORE={settings.blob_store} keeps "
            "uploaded originals in this machine's data directory, where the other replicas cannot read them. "
            f"Set KNORA_BLOB_STORE to one of {', '.join(sorted(SHARED))} (docs/deploy.md), or "
            "KNORA_REPLICAS=1 if this is the only server process.")


def binding_problem(settings: Settings, elsewhere: dict[str, int]) -> str | None:
    """What is wrong with knowledge bases bound to other stores than ``settings.blob_store`` (``elsewhere``:
    store → how many), or None. Every process reads originals from the configured store only, so those
    knowledge bases' originals and images cannot be downloaded, re-parsed, copied or moved until
    ``knora blobs migrate`` has moved them; ``knora serve`` refuses several replicas with such knowledge bases
    and warns one server."""
    if not elsewhere:
        return None
    bound = ", ".join(f"{n} to {store}" for store, n in sorted(elsewhere.items()))
    hint = " and ".join(f"`knora blobs migrate --from {store}`" for store in sorted(elsewhere))
    return (f"knowledge bases are bound to another blob store than KNORA_BLOB_STORE={settings.blob_store} "
            f"({bound}): their uploaded originals and images are not in the store this server reads. Run "
            f"{hint} with these settings (docs/deploy.md) to copy them over and rebind them.")
