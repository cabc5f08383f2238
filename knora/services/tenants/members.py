"""Tenants and their members: creating a tenant (its creator becomes its owner), members with roles,
invitations, leaving (issue 14).

The rules a demanding team expects: nobody grants a role above their own; only an owner makes, changes or
removes an owner; a tenant always keeps an owner (the last one can neither leave, be removed nor demoted:
409); an invitation names an e-mail and a role, and is accepted by the user with that e-mail (a registration
with that e-mail is allowed while registration is otherwise closed).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from knora.domain.access import Invitation, Member, Principal, Role
from knora.domain.errors import BadRequest, Conflict, Forbidden, NotFound
from knora.domain.models import Tenant
from knora.ports.account_store import AccountRepo
from knora.services.tenants.accounts import AccountService
from knora.services.tenants.service import TenantService

INVITATION_TTL = timedelta(days=7)
MAX_PAGE_SIZE = 100


def page_window(page: int, page_size: int) -> tuple[int, int]:
    """The page and page size a listing serves: page from 1, 1 to ``MAX_PAGE_SIZE`` rows."""
    return max(1, page), min(max(1, page_size), MAX_PAGE_SIZE)


class MemberService:
    def __init__(self, repo: AccountRepo, tenants: TenantService, accounts: AccountService) -> None:
        self._repo = repo
        self._tenants = tenants
        self._accounts = accounts

    async def ensure_owner(self, tenant_id: int, email: str, password: str | None) -> tuple[str, str] | None:
        """On the first start (no account exists): an owner account of the default tenant, ``email`` with
        ``password`` or a generated one. Returns (login, password) when it made one, for printing once."""
        if await self._accounts.users():
            return None
        chosen = password or secrets.token_urlsafe(12)
        username = (email.split("@", 1)[0] or "owner")[:64]
        user = await self._accounts.register(username if len(username) >= 3 else "owner", email, chosen)
        await self._repo.add_member(tenant_id, user.id, Role.OWNER, None)
        return email, chosen

    async def create_tenant(self, owner_id: str, name: str, description: str = "") -> Tenant:
        tenant = await self._tenants.create_tenant(name, description)
        await self._repo.add_member(tenant.id, owner_id, Role.OWNER, None)
        return tenant

    async def members(self, tenant_id: int, query: str = "", page: int = 1,
                      page_size: int = 20) -> tuple[list[Member], int]:
        page, page_size = page_window(page, page_size)
        return await self._repo.members(tenant_id, query.strip(), (page - 1) * page_size, page_size)

    async def add(self, by: Principal, email: str, role: Role) -> Member:
        """Adds a registered user (by e-mail) with ``role``; 404 when no user has that e-mail."""
        _may_grant(by, role)
        user = await self._accounts.find(email)
        if user is None:
            raise NotFound("No user is registered with that e-mail: invite them instead")
        await self._repo.add_member(by.tenant_id, user.id, role, by.actor)
        self._accounts.forget_member(by.tenant_id)
        found = await self._repo.member(by.tenant_id, user.id)
        assert found is not None
        return found

    async def enrol(self, tenant_id: int, user_id: str, role: Role, by: str) -> Member:
        """An operator's addition (``knora user create``: the operator runs the server, no role is checked);
        409 when the user is a member already."""
        await self._repo.add_member(tenant_id, user_id, role, by)
        self._accounts.forget_member(tenant_id)
        found = await self._repo.member(tenant_id, user_id)
        assert found is not None
        return found

    async def set_role(self, by: Principal, user_id: str, role: Role) -> Member:
        current = await self._member(by.tenant_id, user_id)
        _may_grant(by, role)
        _may_manage(by, current)
        if current.role is Role.OWNER and role is not Role.OWNER:
            await self._keep_an_owner(by.tenant_id)
        await self._repo.set_member_role(by.tenant_id, user_id, role)
        self._accounts.forget_member(by.tenant_id)
        return current.model_copy(update={"role": role})

    async def remove(self, by: Principal, user_id: str) -> None:
        current = await self._member(by.tenant_id, user_id)
        _may_manage(by, current)
        if current.role is Role.OWNER:
            await self._keep_an_owner(by.tenant_id)
        await self._repo.remove_member(by.tenant_id, user_id)
        self._accounts.forget_member(by.tenant_id)

    async def leave(self, by: Principal) -> None:
        if by.user_id is None:
            raise BadRequest("An API key is not a member: revoke it instead")
        current = await self._member(by.tenant_id, by.user_id)
        if current.role is Role.OWNER:
            await self._keep_an_owner(by.tenant_id)
        await self._repo.remove_member(by.tenant_id, by.user_id)
        self._accounts.forget_member(by.tenant_id)

    async def _member(self, tenant_id: int, user_id: str) -> Member:
        found = await self._repo.member(tenant_id, user_id)
        if found is None:
            raise NotFound("No such member")
        return found

    async def _keep_an_owner(self, tenant_id: int) -> None:
        if await self._repo.count_role(tenant_id, Role.OWNER) <= 1:
            raise Conflict("A tenant keeps at least one owner: make someone else owner first")

    # --- invitations ------------------------------------------------------------------------------------
    async def invite(self, by: Principal, email: str, role: Role) -> Invitation:
        email = email.strip().lower()
        if "@" not in email:
            raise BadRequest("email: not an e-mail address")
        _may_grant(by, role)
        user = await self._accounts.find(email)
        if user is not None and await self._repo.member(by.tenant_id, user.id) is not None:
            raise Conflict("That user is a member of this tenant already")
        for pending in await self._repo.invitations(tenant_id=by.tenant_id, email=email, status="pending"):
            await self._repo.set_invitation_status(pending.id, "revoked")  # the newest invitation counts
        return await self._repo.create_invitation(by.tenant_id, email, role, by.actor,
                                                  datetime.now(UTC) + INVITATION_TTL)

    async def tenant_invitations(self, tenant_id: int) -> list[Invitation]:
        return await self._repo.invitations(tenant_id=tenant_id)

    async def revoke_invitation(self, tenant_id: int, invitation_id: str) -> None:
        found = await self._repo.invitation(invitation_id)
        if found is None or found.tenant_id != tenant_id:
            raise NotFound("No such invitation")
        if not await self._repo.set_invitation_status(invitation_id, "revoked"):
            raise Conflict(f"The invitation is {found.status} already")

    async def my_invitations(self, email: str, user_id: str | None = None) -> list[Invitation]:
        """The open invitations naming ``email``; with ``user_id``, none to a tenant the user is a member of
        already (an admin may have added them directly: nothing is left to accept)."""
        now = datetime.now(UTC)
        joined = {m.tenant_id for m in await self._repo.memberships(user_id)} if user_id else set()
        return [i for i in await self._repo.invitations(email=email, status="pending")
                if (i.expires_at is None or i.expires_at > now) and i.tenant_id not in joined]

    async def answer(self, user_id: str, invitation_id: str, *, accept: bool) -> Invitation:
        user = await self._accounts.user(user_id)
        found = await self._repo.invitation(invitation_id)
        if user is None or found is None or found.email != user.email.lower():
            raise NotFound("No such invitation")
        expired = found.expires_at is not None and found.expires_at <= datetime.now(UTC)
        if found.status != "pending" or expired:
            raise Conflict("The invitation is no longer open")
        if not await self._repo.set_invitation_status(invitation_id, "accepted" if accept else "declined"):
            raise Conflict("The invitation is no longer open")
        if accept and await self._repo.member(found.tenant_id, user_id) is None:
            await self._repo.add_member(found.tenant_id, user_id, found.role, found.invited_by)
            self._accounts.forget_member(found.tenant_id)
        return found.model_copy(update={"status": "accepted" if accept else "declined"})

    async def invited(self, email: str) -> bool:
        """Whether an open invitation names this e-mail (which may register while registration is closed)."""
        return bool(await self.my_invitations(email.strip().lower()))


def _may_grant(by: Principal, role: Role) -> None:
    if not by.role.covers(role):
        raise Forbidden(f"A {by.role.value} cannot grant the {role.value} role")


def _may_manage(by: Principal, member: Member) -> None:
    if not by.role.covers(member.role):
        raise Forbidden(f"A {by.role.value} cannot change a member who is {member.role.value}")
