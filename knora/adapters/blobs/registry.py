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
