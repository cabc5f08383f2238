"""Where a knowledge base's originals are stored, in WeKnora's terms (issue 13 item 1, issue 16).

WeKnora names storage twice: a provider (``storage_provider_config.provider``: "local", "minio", "cos", "s3"…)
and a concrete instance (``storage_backend_id``, one row of ``/storage-backends``). Knora has one of each: the
blob store the deployment chose (``KNORA_BLOB_STORE``), described by a ``StorageView``: ``local`` (files under
the data directory), ``s3`` (WeKnora's name for AWS S3 and S3-compatible stores, with WeKnora's ``s3``
section fields: endpoint, region, bucket_name, path_prefix) or ``postgres`` (Knora's own: WeKnora has no
database store, so it is named as it is). Every knowledge base is bound to it, and a request naming any other
provider or instance is refused (400), so that no client is told its files went somewhere they do not.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from knora.domain.errors import ValidationFailed
from knora.domain.knowledge import StorageProviderConfig
from knora.domain.models import BUILTIN_CREATED_AT
from knora.ports.blobs import BlobStore
from knora.settings import Settings

LOCAL_PROVIDER = "local"
LOCAL_BACKEND_ID = "builtin-local"
PROVIDERS = (LOCAL_PROVIDER,)  # the embedded default's; a deployment's own is ``StorageView.providers``


@dataclass(frozen=True)
class StorageView:
    """The deployment's one blob store as WeKnora's storage routes describe it."""

    provider: str
    name: str
    description: str
    config: dict[str, str] = field(default_factory=dict)  # no secrets: those are the operator's settings

    @property
    def backend_id(self) -> str:
        return f"builtin-{self.provider}"

    @property
    def providers(self) -> tuple[str, ...]:
        return (self.provider,)


LOCAL_VIEW = StorageView(LOCAL_PROVIDER, "Local files",
                         "Local files under Knora's data directory (one machine)", {"path_prefix": ""})


def view_of(settings: Settings) -> StorageView:
    """What ``KNORA_BLOB_STORE`` (and its ``KNORA_S3_*`` settings) chose."""
    if settings.blob_store == "s3":
        return StorageView("s3", "S3", "S3-compatible object store (KNORA_S3_*), shared by every replica", {
            "endpoint": settings.s3_endpoint_url or "", "region": settings.s3_region or "",
            "bucket_name": settings.s3_bucket, "path_prefix": settings.s3_prefix})
    if settings.blob_store == "postgres":
        return StorageView("postgres", "PostgreSQL",
                           "Knora's PostgreSQL database (KNORA_DATABASE_URL), shared by every replica")
    return LOCAL_VIEW


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


def local_backend(tenant_id: int, view: StorageView = LOCAL_VIEW) -> StorageBackend:
    """The one row of ``/storage-backends``: the deployment's store (``view``)."""
    stamp = BUILTIN_CREATED_AT.isoformat()
    return StorageBackend(id=view.backend_id, tenant_id=tenant_id, name=view.name, provider=view.provider,
                          config=dict(view.config), created_at=stamp, updated_at=stamp)


def engine_status(view: StorageView = LOCAL_VIEW) -> dict[str, Any]:
    """``GET /system/storage-engine-status``: the engines this deployment can store into."""
    return {"engines": [{"name": view.provider, "allowed": True, "available": True,
                         "description": view.description}],
            "allowed_providers": list(view.providers), "minio_env_available": False}


def engine_config(view: StorageView = LOCAL_VIEW) -> dict[str, Any]:
    """The tenant setting ``storage-engine-config`` as Knora has it: the deployment's provider and its
    parameters (set by the operator's settings, not by a tenant)."""
    return {"default_provider": view.provider, view.provider: dict(view.config)}


def _provider(value: object, field: str, view: StorageView) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ValidationFailed(f"{field} must be a string")
    provider = value.strip().lower()
    if provider and provider not in view.providers:
        raise ValidationFailed(f"{field}: storage provider {value!r} is not available in Knora "
                               f"(available: {', '.join(view.providers)})")
    return provider


def check_engine_config(body: dict[str, Any], view: StorageView = LOCAL_VIEW) -> dict[str, Any]:
    """A ``PUT storage-engine-config`` body: the default provider must be the one Knora has, and its section
    may only repeat what the settings say (its place is the operator's: the data directory, ``KNORA_S3_*``).
    Other providers' sections, which the UI sends empty, are not stored: Knora has none of them."""
    _provider(body.get("default_provider"), "default_provider", view)
    section = body.get(view.provider)
    if section is not None and not isinstance(section, dict):
        raise ValidationFailed(f"{view.provider} must be an object")
    for key, value in (section or {}).items():
        if value not in (None, "", view.config.get(key, "")):
            raise ValidationFailed(f"{view.provider}.{key} is not configurable here: Knora's blob store is "
                                   "set by the deployment's settings (KNORA_BLOB_STORE and its KNORA_S3_*)")
    return engine_config(view)


def binding(provider_config: object = None, backend_id: object = None, *,
            legacy: object = None, view: StorageView = LOCAL_VIEW) -> tuple[StorageProviderConfig, str]:
    """The (provider config, backend id) a knowledge base is stored with, from what a request names: the
    instance (``storage_backend_id``) wins, then ``storage_provider_config.provider``, then the legacy
    ``storage_config.provider``; what names nothing gets the tenant default — the deployment's store."""
    if backend_id not in (None, "", view.backend_id):
        raise ValidationFailed(f"storage_backend_id: storage backend {backend_id!r} not found")
    provider = ""
    for field_name, cfg in (("storage_provider_config", provider_config), ("storage_config", legacy)):
        if cfg is None:
            continue
        if not isinstance(cfg, dict):
            raise ValidationFailed(f"{field_name} must be an object")
        # both are checked: neither may lie
        named = _provider(cfg.get("provider"), f"{field_name}.provider", view)
        provider = provider or named
    return StorageProviderConfig(provider=provider or view.provider), view.backend_id


async def check_local(blobs: BlobStore, view: StorageView = LOCAL_VIEW) -> dict[str, Any]:
    """WeKnora's storage check (``CheckStorageEngineResult``) for Knora's one store: a probe blob is written,
    read back and removed through the store every upload uses; a store that cannot do so is ``ok: false``
    with the reason."""
    key = f"storage-check/{uuid.uuid4().hex}"
    probe = b"knora storage check"
    try:
        await blobs.put(key, probe)
        try:
            if await blobs.get(key) != probe:
                return {"ok": False, "message": f"{view.name} storage returned other bytes than were written"}
        finally:
            await blobs.delete(key)
    except Exception as exc:  # noqa: BLE001 - whatever the store raised (a disk, S3, the database) is the answer
        return {"ok": False, "message": f"{view.name} storage is not writable: {exc}"}
    if view.provider == LOCAL_PROVIDER:
        return {"ok": True, "message": "Local storage under Knora's data directory is writable"}
    return {"ok": True, "message": f"{view.name} storage ({view.description}) is writable"}


def check_provider(body: dict[str, Any], view: StorageView = LOCAL_VIEW) -> None:
    """A storage check names a provider (``provider``, WeKnora's ``POST /system/storage-engine-check``) that
    must be the one Knora has; an absent one means the default."""
    _provider(body.get("provider"), "provider", view)
