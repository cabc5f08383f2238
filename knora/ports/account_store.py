"""Accounts as the account and member services see them: users (passwords only as hashes), their memberships
of tenants with a role, login sessions (refresh tokens only as hashes) and invitations."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from knora.domain.access import Invitation, Member, Role, User


@runtime_checkable
class AccountRepo(Protocol):
    # --- users ----------------------------------------------------------------------------------------------
    async def create_user(self, username: str, email: str, password_hash: str) -> User:
        """Raises ``Conflict`` when the username or e-mail is taken."""
        ...

    async def user_by_login(self, login: str) -> tuple[User, str] | None:
        """The user whose username or (lower-cased) e-mail is ``login``, with their password hash."""
        ...

    async def user(self, user_id: str) -> tuple[User, str] | None: ...

    async def users(self) -> list[User]: ...

    async def set_password(self, user_id: str, password_hash: str) -> None: ...

    # --- login sessions -------------------------------------------------------------------------------------
    async def create_session(self, user_id: str, refresh_hash: str, expires_at: datetime) -> str:
        """A new login session; returns its id."""
        ...

    async def rotate_session(self, refresh_hash: str, new_hash: str, now: datetime,
                             expires_at: datetime) -> tuple[str, str] | None:
        """Replaces a live session's refresh token (a used one no longer works); (session id, user id), or
        None for an unknown, ended or expired token."""
        ...

    async def end_sessions(self, user_id: str, *, session_id: str | None = None,
                           keep: str | None = None) -> int:
        """Ends one session of the user, or all but ``keep``; returns how many were ended."""
        ...

    async def session_role(self, session_id: str, user_id: str, tenant_id: int,
                           now: datetime) -> tuple[bool, Role | None]:
        """Whether the session is live and its user active, and the user's role in the tenant (None when
        not a member)."""
        ...

    # --- members --------------------------------------------------------------------------------------------
    async def memberships(self, user_id: str) -> list[Member]:
        """The user's tenants, oldest membership first."""
        ...

    async def members(self, tenant_id: int, query: str, offset: int, limit: int) -> tuple[list[Member], int]:
        """A page of the tenant's members (matching ``query`` in username or e-mail) and how many match."""
        ...

    async def member(self, tenant_id: int, user_id: str) -> Member | None: ...

    async def add_member(self, tenant_id: int, user_id: str, role: Role, invited_by: str | None) -> None:
        """Raises ``Conflict`` when the user is a member already."""
        ...

    async def set_member_role(self, tenant_id: int, user_id: str, role: Role) -> bool: ...

    async def remove_member(self, tenant_id: int, user_id: str) -> bool: ...

    async def count_role(self, tenant_id: int, role: Role) -> int: ...

    # --- invitations ----------------------------------------------------------------------------------------
    async def create_invitation(self, tenant_id: int, email: str, role: Role, invited_by: str | None,
                                expires_at: datetime) -> Invitation: ...

    async def invitations(self, *, tenant_id: int | None = None, email: str | None = None,
                          status: str | None = None) -> list[Invitation]: ...

    async def invitation(self, invitation_id: str) -> Invitation | None: ...

    async def set_invitation_status(self, invitation_id: str, status: str) -> bool: ...
