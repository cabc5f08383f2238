"""Tenants and their API keys as the tenant service sees them. Keys are only ever handled as hashes here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from knora.domain.access import ApiKey, KeyGrant, Role
from knora.domain.models import Tenant


@dataclass(frozen=True)
class StoredKey:
    """An API key row as stored: its hash and the little plaintext kept to recognise it."""

    id: str
    name: str
    prefix: str
    key_hash: str
    created_at: datetime


@runtime_checkable
class TenantRepo(Protocol):
    async def key_grant(self, key_hash: str) -> KeyGrant | None:
        """What an API key (by its hash) grants, or None for an unknown key. Expiry is the caller's check."""
        ...

    async def touch_keys(self, key_ids: Sequence[str], when: datetime) -> None:
        """Records the keys' last use."""
        ...

    async def create_key(self, tenant_id: int, name: str, key_hash: str, key_prefix: str, role: Role,
                         expires_at: datetime | None, created_by: str | None) -> ApiKey: ...

    async def list_keys(self, tenant_id: int) -> list[ApiKey]:
        """The tenant's keys as listed (no hashes), newest first."""
        ...

    async def rename_key(self, tenant_id: int, key_id: str, name: str) -> ApiKey | None: ...

    async def delete_key(self, tenant_id: int, key_id: str) -> str | None:
        """Deletes one of the tenant's keys; its hash (for the caller's cache), or None if there is none."""
        ...

    async def tenants(self, ids: Sequence[int]) -> list[Tenant]: ...

    async def all_tenants(self) -> list[Tenant]:
        """Every tenant, by id (the operator's ``knora tenant list``)."""
        ...

    async def create_tenant(self, name: str, description: str) -> Tenant: ...

    async def update(self, tenant_id: int, name: str | None, description: str | None) -> Tenant | None: ...

    async def delete(self, tenant_id: int) -> bool:
        """Deletes the tenant and everything that is its (the database cascades)."""
        ...

    async def get(self, tenant_id: int) -> Tenant | None: ...

    async def set_retrieval_config(self, tenant_id: int, config: dict[str, object]) -> bool:
        """Replaces the tenant's retrieval settings (``/tenants/kv/retrieval-config``); False if there is no
        such tenant."""
        ...

    async def create(self, name: str, key_hash: str, key_prefix: str) -> int:
        """A new tenant with one API key, in one transaction; returns its id."""
        ...

    async def ensure_default(self, name: str, key_hash: str | None, key_prefix: str,
                             generated_hash: str, generated_prefix: str) -> tuple[int, bool]:
        """In one transaction: the first tenant (created as ``name`` if there is none); with ``key_hash`` that
        key is added to it unless it exists; without, the generated key is added when the tenant has no key.
        Returns (tenant id, whether the generated key was stored)."""
        ...

    async def replace_named_key(self, tenant_id: int, name: str, key_hash: str, key_prefix: str) -> None:
        """In one transaction: the tenant's keys called ``name`` are revoked and this key is added as
        ``name``."""
        ...

    async def keys(self, tenant_id: int) -> list[StoredKey]:
        """The tenant's keys, oldest first."""
        ...

    async def revoke(self, key_ids: Sequence[str]) -> int:
        """Deletes these keys; returns how many there were."""
        ...
