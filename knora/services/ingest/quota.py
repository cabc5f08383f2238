"""The tenant storage quota (issue 20): ``tenant_storage_quota_bytes`` over the sum of the tenant's documents'
``file_size`` (uploads, manual documents, and URL documents once fetched), counted by the repository in one
query each time — no counter to drift, no schema change.

A document that would take the tenant past the quota is refused with 403 (WeKnora's ``Forbidden``, 1002):
the request itself is fine (413 is for a body over ``max_upload_bytes``), the tenant's allowance is what is
spent, and a client should not retry it as is. Uploads and manual documents are checked before anything is
stored, under a per-tenant lock, so concurrent uploads to one process cannot both slip under the quota; across
replicas two uploads in the same instant may each see the room the other takes (the quota is then overrun by
at most those uploads). A URL import's size is known only after the fetch: the document fails with the reason.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from knora.domain.errors import Forbidden
from knora.ports.store import KnowledgeRepo


class StorageQuotaExceeded(Forbidden):
    """Storing this document would take the tenant past ``tenant_storage_quota_bytes``."""


@dataclass(frozen=True)
class StorageUsage:
    quota: int  # bytes; 0 = unlimited
    used: int


class StorageQuota:
    def __init__(self, knowledge: KnowledgeRepo, quota_bytes: int) -> None:
        self._knowledge = knowledge
        self.quota = quota_bytes
        self._locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def usage(self, tenant_id: int) -> StorageUsage:
        return StorageUsage(self.quota, await self._knowledge.storage_used(tenant_id))

    async def check(self, tenant_id: int, adding: int, *, counted: int = 0,
                    what: str = "this document") -> None:
        """Raises ``StorageQuotaExceeded`` when ``adding`` bytes (replacing ``counted`` already in the sum)
        do not fit."""
        if not self.quota:
            return
        used = await self._knowledge.storage_used(tenant_id) - counted
        if used + adding > self.quota:
            raise StorageQuotaExceeded(
                f"Storage quota exceeded: the tenant stores {used} of its {self.quota} bytes, and {what} "
                f"({adding} bytes) does not fit. Delete documents, or ask the operator to raise "
                "tenant_storage_quota_bytes",
                details={"storage_quota": self.quota, "storage_used": used, "size": adding})

    @asynccontextmanager
    async def admitting(self, tenant_id: int, size: int, what: str) -> AsyncIterator[None]:
        """Checks, then holds the tenant's lock while the caller stores the document (so that the next check
        of this process counts it)."""
        if not self.quota:
            yield
            return
        async with self._locks[tenant_id]:
            await self.check(tenant_id, size, what=what)
            yield
