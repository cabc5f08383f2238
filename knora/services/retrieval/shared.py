"""Which knowledge bases a tenant may search and chat over: its own, and those other tenants shared with it
(issue 14). Every place that picks the caller's KBs out of a tenant-agnostic read goes through here, so a
share (and its revocation, read from the database each time) counts everywhere at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from knora.domain.knowledge import KnowledgeBase


class ShareReads(Protocol):
    """The one read this needs (``SearchStore.shared_kb_ids``)."""

    async def shared_kb_ids(self, tenant_id: int, kb_ids: Sequence[str]) -> set[str]: ...


async def readable(store: ShareReads, tenant_id: int, kbs: Sequence[KnowledgeBase]) -> list[KnowledgeBase]:
    """``kbs`` (in order) that ``tenant_id`` owns or that are shared with it. Costs nothing more when all are
    the tenant's own (no share is read)."""
    foreign = [kb.id for kb in kbs if kb.tenant_id != tenant_id]
    shared = await store.shared_kb_ids(tenant_id, foreign) if foreign else set()
    return [kb for kb in kbs if kb.tenant_id == tenant_id or kb.id in shared]
