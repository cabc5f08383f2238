"""Who a request is: the principal of the credentials it presents (an API key, or a signed-in user's access
token) in the tenant it acts in."""

from __future__ import annotations

from knora.domain.access import Principal
from knora.domain.errors import Forbidden
from knora.services.tenants.accounts import AccountService, looks_like_token
from knora.services.tenants.service import TenantService


class AccessService:
    def __init__(self, tenants: TenantService, accounts: AccountService) -> None:
        self.tenants = tenants
        self.accounts = accounts

    async def resolve(self, credentials: list[str], tenant_id: int | None) -> Principal | None:
        """The principal of the first valid credential, acting in ``tenant_id`` (``X-Tenant-ID``) when
        given, else in the key's tenant or the token's. None when no credential is valid, or a token's user
        is not a member of that tenant. A key names its tenant itself: ``X-Tenant-ID`` naming another is
        refused (403), not silently ignored."""
        for credential in credentials:
            if looks_like_token(credential):
                found = await self.accounts.principal(credential, tenant_id)
                if found is not None:
                    return found
                continue
            grant = await self.tenants.grant(credential)
            if grant is None:
                continue
            if tenant_id is not None and tenant_id != grant.tenant_id:
                raise Forbidden("This API key belongs to another tenant than X-Tenant-ID names")
            return self.tenants.key_principal(grant)
        return None
