"""Shares of knowledge bases and agents with other tenants, as the share service sees them."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from knora.domain.access import Share, SharePermission


@runtime_checkable
class ShareRepo(Protocol):
    async def upsert(
        self,
        resource_type: str,
        resource_id: str,
        owner_tenant_id: int,
        tenant_id: int,
        permission: SharePermission,
        created_by: str | None,
    ) -> Share:
        """Shares the resource with ``tenant_id`` (or changes the permission of the existing share)."""
        ...

    async def of_resource(
        self, resource_type: str, resource_id: str, owner_tenant_id: int
    ) -> list[Share]: ...

    async def received(self, tenant_id: int, resource_type: str) -> list[Share]: ...

    async def grant(self, resource_type: str, resource_id: str, tenant_id: int) -> Share | None:
        """The share through which ``tenant_id`` may use the resource, or None."""
        ...

    async def delete(self, share_id: str, owner_tenant_id: int) -> bool: ...
