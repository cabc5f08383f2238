"""Where a knowledge base's originals are stored, in WeKnora's terms (issue 13 item 1).

WeKnora names storage twice: a provider (``storage_provider_config.provider``: "local", "minio", "cos"…) and a
concrete instance (``storage_backend_id``, one row of ``/storage-backends``). Knora has one of each: the local
blob store under its data directory, which WeKnora calls ``local``. Every knowledge base is bound to it, and a
request naming any other provider or instance is refused (400), so that no client is told its files went to
an object store that Knora does not have.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from knora.domain.errors import ValidationFailed
from knora.domain.knowledge import StorageProviderConfig
from knora.domain.models import BUILTIN_CREATED_AT
from knora.ports.blobs import BlobStore

LOCAL_PROVIDER = "local"
LOCAL_BACKEND_ID = "builtin-local"
PROVIDERS = (LOCAL_PROVIDER,)
_DESCRIPTION = "Local files under Knora's data directory (the blob store of this deployment)"


class StorageBackend(BaseModel):
    """A row of WeKnora's ``GET /storage-backends``."""

    id: str
    tenant_id: int
    name: str
    provider: str
    config: dict[str, Any] = Field(default_factory=dict)
    source: str = "env"  # configured by the deployment, not by a tenant: read-only in the UI
    status: str = "active"
    legacy_alias: bool = False
    created_at: str
    updated_at: str


def local_backend(tenant_id: int) -> StorageBackend:
    stamp = BUILTIN_CREATED_AT.isoformat()
    return StorageBackend(id=LOCAL_BACKEND_ID, tenant_id=tenant_id, name="Local files",
                          provider=LOCAL_PROVIDER, config={"path_prefix": ""}, created_at=stamp,
                          updated_at=stamp)


def engine_status() -> dict[str, Any]:
    """``GET /system/storage-engine-status``: the engines this deployment can store into."""
    return {"engines": [{"name": LOCAL_PROVIDER, "allowed": True, "available": True,
                         "description": _DESCRIPTION}],
            "allowed_providers": list(PROVIDERS), "minio_env_available": False}


def engine_config() -> dict[str, Any]:
    """The tenant setting ``storage-engine-config`` as Knora has it: the local provider, no parameters."""
    return {"default_provider": LOCAL_PROVIDER, "local": {"path_prefix": ""}}


def _provider(value: object, field: str) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ValidationFailed(f"{field} must be a string")
    provider = value.strip().lower()
    if provider and provider not in PROVIDERS:
        raise ValidationFailed(f"{field}: storage provider {value!r} is not available in Knora "
                               f"(available: {', '.join(PROVIDERS)})")
    return provider


def check_engine_config(body: dict[str, Any]) -> dict[str, Any]:
    """A ``PUT storage-engine-config`` body: the default provider must be one Knora has, and the local engine
    takes no parameters (its place is the data directory). Other providers' sections, which the UI sends
    empty, are not stored: Knora has none of them."""
    _provider(body.get("default_provider"), "default_provider")
    local = body.get("local")
    if local is not None and not isinstance(local, dict):
        raise ValidationFailed("local must be an object")
    prefix = (local or {}).get("path_prefix")
    if prefix not in (None, ""):
        raise ValidationFailed("local.path_prefix is not configurable: Knora stores originals under its data "
                               "directory")
    return engine_config()


def binding(provider_config: object = None, backend_id: object = None, *,
            legacy: object = None) -> tuple[StorageProviderConfig, str]:
    """The (provider config, backend id) a knowledge base is stored with, from what a request names: the
    instance (``storage_backend_id``) wins, then ``storage_provider_config.provider``, then the legacy
    ``storage_config.provider``; what names nothing gets the tenant default — Knora's local storage."""
    if backend_id not in (None, "", LOCAL_BACKEND_ID):
        raise ValidationFailed(f"storage_backend_id: storage backend {backend_id!r} not found")
    provider = ""
    for field, cfg in (("storage_provider_config", provider_config), ("storage_config", legacy)):
        if cfg is None:
            continue
        if not isinstance(cfg, dict):
            raise ValidationFailed(f"{field} must be an object")
        named = _provider(cfg.get("provider"), f"{field}.provider")  # both are checked: neither may lie
        provider = provider or named
    return StorageProviderConfig(provider=provider or LOCAL_PROVIDER), LOCAL_BACKEND_ID


async def check_local(blobs: BlobStore) -> dict[str, Any]:
    """WeKnora's storage check (``CheckStorageEngineResult``) for Knora's one store: a probe blob is written,
    read back and removed through the store every upload uses; a store that cannot do so is ``ok: false``
    with the reason."""
    key = f"storage-check/{uuid.uuid4().hex}"
    probe = b"knora storage check"
    try:
        await blobs.put(key, probe)
        try:
            if await blobs.get(key) != probe:
                return {"ok": False, "message": "local storage returned other bytes than were written"}
        finally:
            await blobs.delete(key)
    except (OSError, KeyError) as exc:
        return {"ok": False, "message": f"local storage is not writable: {exc}"}
    return {"ok": True, "message": "Local storage under Knora's data directory is writable"}


def check_provider(body: dict[str, Any]) -> None:
    """A storage check names a provider (``provider``, WeKnora's ``POST /system/storage-engine-check``) that
    must be one Knora has; an absent one means the default."""
    _provider(body.get("provider"), "provider")
