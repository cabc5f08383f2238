"""Knowledge bases shared with other tenants (issue 14): an admin of the owning tenant shares one with
another tenant to read (search and chat over it, list and read its documents) or to edit (also add
documents); the receiving tenant lists it under ``GET /shared-knowledge-bases``. Revoking a share removes
access at once: no share is cached anywhere (``knora.services.retrieval.shared``)."""

from __future__ import annotations

from knora.domain.access import KB_SHARE, Principal, Share, SharePermission
from knora.domain.errors import BadRequest, NotFound
from knora.domain.knowledge import KnowledgeBase
from knora.ports.share_store import ShareRepo
from knora.services.kb.service import KnowledgeBaseService
from knora.services.tenants.service import TenantService


def parse_permission(value: object) -> SharePermission:
    v = str(value or "read").strip().lower()
    v = {"viewer": "read", "editor": "edit", "write": "edit"}.get(v, v)
    if v not in SharePermission._value2member_map_:
        raise BadRequest("permission: read or edit")
    return SharePermission(v)


class ShareService:
    def __init__(self, repo: ShareRepo, kbs: KnowledgeBaseService, tenants: TenantService) -> None:
        self._repo = repo
        self._kbs = kbs
        self._tenants = tenants

    async def share_kb(self, by: Principal, kb_id: str, tenant_id: int, permission: SharePermission) -> Share:
        kb = await self._kbs.get(by.tenant_id, kb_id)  # 404 unless the caller's tenant owns it
        if tenant_id == by.tenant_id:
            raise BadRequest("tenant_id: a knowledge base is its own tenant's already")
        if await self._tenants.get(tenant_id) is None:
            raise NotFound("No such tenant to share with")
        return await self._repo.upsert(KB_SHARE, kb.id, by.tenant_id, tenant_id, permission, by.actor)

    async def kb_shares(self, tenant_id: int, kb_id: str) -> list[Share]:
        kb = await self._kbs.get(tenant_id, kb_id)
        return await self._repo.of_resource(KB_SHARE, kb.id, tenant_id)

    async def revoke(self, tenant_id: int, kb_id: str, share_id: str) -> None:
        await self._kbs.get(tenant_id, kb_id)
        if not await self._repo.delete(share_id, tenant_id):
            raise NotFound("No such share")

    async def received(self, tenant_id: int) -> list[tuple[Share, KnowledgeBase]]:
        """The knowledge bases shared with the tenant, with their shares."""
        out: list[tuple[Share, KnowledgeBase]] = []
        for share in await self._repo.received(tenant_id, KB_SHARE):
            try:
                out.append((share, await self._kbs.get(share.owner_tenant_id, share.resource_id)))
            except NotFound:
                continue  # deleted since (its share goes with the next cleanup)
        return out

    async def grant(self, tenant_id: int, kb_id: str) -> Share | None:
        """The share through which the tenant may use this knowledge base, or None."""
        return await self._repo.grant(KB_SHARE, kb_id, tenant_id)
