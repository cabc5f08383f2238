"""Users, memberships, login sessions and invitations on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import aware
from knora.adapters.db.tables import AuthSessionRow, InvitationRow, TenantMemberRow, TenantRow, UserRow
from knora.domain.access import Invitation, Member, Role, User
from knora.domain.common import new_id, utcnow
from knora.domain.errors import Conflict


def _user(row: UserRow) -> User:
    return User(
        id=row.id,
        username=row.username,
        email=row.email,
        is_active=row.is_active,
        created_at=aware(row.created_at),
        updated_at=aware(row.updated_at),
    )


def _invitation(row: InvitationRow, tenant_name: str = "") -> Invitation:
    return Invitation(
        id=row.id,
        tenant_id=row.tenant_id,
        tenant_name=tenant_name,
        email=row.email,
        role=Role(row.role),
        invited_by=row.invited_by,
        status=row.status,
        created_at=aware(row.created_at),
        expires_at=aware(row.expires_at),
    )


_MEMBER_COLUMNS = (
    TenantMemberRow.tenant_id,
    TenantRow.name,
    TenantMemberRow.user_id,
    UserRow.username,
    UserRow.email,
    TenantMemberRow.role,
    TenantMemberRow.invited_by,
    TenantMemberRow.created_at,
)


def _member(row: tuple[object, ...]) -> Member:
    tenant_id, tenant_name, user_id, username, email, role, invited_by, joined = row
    return Member(
        tenant_id=int(str(tenant_id)),
        tenant_name=str(tenant_name),
        user_id=str(user_id),
        username=str(username),
        email=str(email),
        role=Role(str(role)),
        invited_by=None if invited_by is None else str(invited_by),
        joined_at=aware(joined) if isinstance(joined, datetime) else utcnow(),
    )


def _members_query() -> Select[int, str, str, str, str, str, str | None, datetime]:
    return (
        select(*_MEMBER_COLUMNS)
        .join(UserRow, UserRow.id == TenantMemberRow.user_id)
        .join(TenantRow, TenantRow.id == TenantMemberRow.tenant_id)
    )


class SqlAccountRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    # --- users ----------------------------------------------------------------------------------------------
    async def create_user(self, username: str, email: str, password_hash: str) -> User:
        try:
            async with self._sessions.begin() as s:
                row = UserRow(
                    id=new_id(),
                    username=username,
                    email=email.lower(),
                    password_hash=password_hash,
                    is_active=True,
                )
                s.add(row)
                await s.flush()
                await s.refresh(row)
                return _user(row)
        except IntegrityError as exc:
            raise Conflict("That username or e-mail is already registered") from exc

    async def user_by_login(self, login: str) -> tuple[User, str] | None:
        async with self._sessions() as s:
            row = (
                (
                    await s.execute(
                        select(UserRow).where(or_(UserRow.username == login, UserRow.email == login.lower()))
                    )
                )
                .scalars()
                .first()
            )
        return None if row is None else (_user(row), row.password_hash)

    async def user(self, user_id: str) -> tuple[User, str] | None:
        async with self._sessions() as s:
            row = await s.get(UserRow, user_id)
        return None if row is None else (_user(row), row.password_hash)

    async def users(self) -> list[User]:
        async with self._sessions() as s:
            rows = (await s.execute(select(UserRow).order_by(UserRow.created_at, UserRow.id))).scalars().all()
        return [_user(r) for r in rows]

    async def set_password(self, user_id: str, password_hash: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(
                update(UserRow)
                .where(UserRow.id == user_id)
                .values(password_hash=password_hash, updated_at=utcnow())
            )

    # --- login sessions -------------------------------------------------------------------------------------
    async def create_session(self, user_id: str, refresh_hash: str, expires_at: datetime) -> str:
        async with self._sessions.begin() as s:
            row = AuthSessionRow(
                id=new_id(), user_id=user_id, refresh_hash=refresh_hash, expires_at=expires_at
            )
            s.add(row)
            return row.id

    async def rotate_session(
        self, refresh_hash: str, new_hash: str, now: datetime, expires_at: datetime
    ) -> tuple[str, str] | None:
        async with self._sessions.begin() as s:
            res = await s.execute(
                update(AuthSessionRow)
                .where(
                    AuthSessionRow.refresh_hash == refresh_hash,
                    AuthSessionRow.revoked_at.is_(None),
                    AuthSessionRow.expires_at > now,
                )
                .values(refresh_hash=new_hash, expires_at=expires_at)
                .returning(AuthSessionRow.id, AuthSessionRow.user_id)
            )
            row = res.first()
        return None if row is None else (str(row[0]), str(row[1]))

    async def end_sessions(
        self, user_id: str, *, session_id: str | None = None, keep: str | None = None
    ) -> int:
        q = update(AuthSessionRow).where(
            AuthSessionRow.user_id == user_id, AuthSessionRow.revoked_at.is_(None)
        )
        if session_id is not None:
            q = q.where(AuthSessionRow.id == session_id)
        if keep is not None:
            q = q.where(AuthSessionRow.id != keep)
        async with self._sessions.begin() as s:
            res = await s.execute(q.values(revoked_at=utcnow()))
            return int(res.rowcount)  # type: ignore[attr-defined]

    async def session_role(
        self, session_id: str, user_id: str, tenant_id: int, now: datetime
    ) -> tuple[bool, Role | None]:
        q = (
            select(TenantMemberRow.role)
            .select_from(AuthSessionRow)
            .join(UserRow, UserRow.id == AuthSessionRow.user_id)
            .outerjoin(
                TenantMemberRow,
                and_(TenantMemberRow.user_id == UserRow.id, TenantMemberRow.tenant_id == tenant_id),
            )
            .where(
                AuthSessionRow.id == session_id,
                AuthSessionRow.user_id == user_id,
                AuthSessionRow.revoked_at.is_(None),
                AuthSessionRow.expires_at > now,
                UserRow.is_active.is_(True),
            )
        )
        async with self._sessions() as s:
            row = (await s.execute(q)).first()
        if row is None:
            return False, None
        return True, None if row[0] is None else Role(row[0])

    # --- members --------------------------------------------------------------------------------------------
    async def memberships(self, user_id: str) -> list[Member]:
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    _members_query()
                    .where(TenantMemberRow.user_id == user_id)
                    .order_by(TenantMemberRow.created_at, TenantMemberRow.tenant_id)
                )
            ).all()
        return [_member(tuple(r)) for r in rows]

    async def members(self, tenant_id: int, query: str, offset: int, limit: int) -> tuple[list[Member], int]:
        where = [TenantMemberRow.tenant_id == tenant_id]
        if query:
            like = f"%{query.lower()}%"
            where.append(or_(func.lower(UserRow.username).like(like), UserRow.email.like(like)))
        async with self._sessions() as s:
            rows = (
                await s.execute(
                    _members_query()
                    .where(*where)
                    .order_by(TenantMemberRow.created_at, UserRow.username)
                    .offset(offset)
                    .limit(limit)
                )
            ).all()
            total = (
                await s.execute(
                    select(func.count())
                    .select_from(TenantMemberRow)
                    .join(UserRow, UserRow.id == TenantMemberRow.user_id)
                    .where(*where)
                )
            ).scalar_one()
        return [_member(tuple(r)) for r in rows], int(total)

    async def member(self, tenant_id: int, user_id: str) -> Member | None:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    _members_query().where(
                        TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.user_id == user_id
                    )
                )
            ).first()
        return None if row is None else _member(tuple(row))

    async def add_member(self, tenant_id: int, user_id: str, role: Role, invited_by: str | None) -> None:
        try:
            async with self._sessions.begin() as s:
                s.add(
                    TenantMemberRow(
                        tenant_id=tenant_id, user_id=user_id, role=role.value, invited_by=invited_by
                    )
                )
        except IntegrityError as exc:
            raise Conflict("That user is a member of this tenant already") from exc

    async def set_member_role(self, tenant_id: int, user_id: str, role: Role) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(
                update(TenantMemberRow)
                .where(TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.user_id == user_id)
                .values(role=role.value)
            )
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def remove_member(self, tenant_id: int, user_id: str) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(TenantMemberRow, (tenant_id, user_id))
            if row is None:
                return False
            await s.delete(row)
            return True

    async def count_role(self, tenant_id: int, role: Role) -> int:
        async with self._sessions() as s:
            n = (
                await s.execute(
                    select(func.count())
                    .select_from(TenantMemberRow)
                    .where(TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.role == role.value)
                )
            ).scalar_one()
        return int(n)

    # --- invitations ----------------------------------------------------------------------------------------
    async def create_invitation(
        self, tenant_id: int, email: str, role: Role, invited_by: str | None, expires_at: datetime
    ) -> Invitation:
        async with self._sessions.begin() as s:
            row = InvitationRow(
                id=new_id(),
                tenant_id=tenant_id,
                email=email.lower(),
                role=role.value,
                invited_by=invited_by,
                status="pending",
                expires_at=expires_at,
            )
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return _invitation(row)

    async def invitations(
        self, *, tenant_id: int | None = None, email: str | None = None, status: str | None = None
    ) -> list[Invitation]:
        q = select(InvitationRow, TenantRow.name).join(TenantRow, TenantRow.id == InvitationRow.tenant_id)
        if tenant_id is not None:
            q = q.where(InvitationRow.tenant_id == tenant_id)
        if email is not None:
            q = q.where(InvitationRow.email == email.lower())
        if status is not None:
            q = q.where(InvitationRow.status == status)
        async with self._sessions() as s:
            rows = (await s.execute(q.order_by(InvitationRow.created_at.desc()))).all()
        return [_invitation(r[0], r[1]) for r in rows]

    async def invitation(self, invitation_id: str) -> Invitation | None:
        async with self._sessions() as s:
            row = (
                await s.execute(
                    select(InvitationRow, TenantRow.name)
                    .join(TenantRow, TenantRow.id == InvitationRow.tenant_id)
                    .where(InvitationRow.id == invitation_id)
                )
            ).first()
        return None if row is None else _invitation(row[0], row[1])

    async def set_invitation_status(self, invitation_id: str, status: str) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(
                update(InvitationRow)
                .where(InvitationRow.id == invitation_id, InvitationRow.status == "pending")
                .values(status=status)
            )
            return bool(res.rowcount)  # type: ignore[attr-defined]
