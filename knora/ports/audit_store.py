"""The audit log as the audit service sees it: entries appended, read newest first."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from knora.domain.access import AuditEntry


@runtime_checkable
class AuditRepo(Protocol):
    async def add(self, entry: AuditEntry) -> None: ...

    async def entries(self, tenant_id: int, *, before_id: int | None, limit: int,
                      action: str | None = None) -> list[AuditEntry]:
        """The tenant's entries newest first, older than ``before_id`` when given (pages)."""
        ...
