"""The audit log and shares on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import aware
from knora.adapters.db.tables import AuditRow, ShareRow
from knora.domain.access import AuditEntry, Share, SharePermission
from knora.domain.common import new_id


class SqlAuditRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def add(self, entry: AuditEntry) -> None:
        async with self._sessions.begin() as s:
            s.add(AuditRow(tenant_id=entry.tenant_id, actor=entry.actor, action=entry.action,
                           target=entry.target, status=entry.status, ip=entry.ip, detail=dict(entry.detail),
                           created_at=entry.created_at))

    async def entries(self, tenant_id: int, *, before_id: int | None, limit: int,
                      action: str | None = None) -> list[AuditEntry]:
        q = select(AuditRow).where(AuditRow.tenant_id == tenant_id)
        if before_id is not None:
            q = q.where(AuditRow.id < before_id)
        if action:
            q = q.where(AuditRow.action.contains(action))
        async with self._sessions() as s:
            rows = (await s.execute(q.order_by(AuditRow.id.desc()).limit(limit))).scalars().all()
        return [AuditEntry(id=r.id, tenant_id=r.tenant_id, actor=r.actor, action=r.action, target=r.target,
                           status=r.status, ip=r.ip, detail=r.detail or {}, created_at=aware(r.created_at))
                for r in rows]


def _share(row: ShareRow) -> Share:
    return Share(id=row.id, resource_type=row.resource_type, resource_id=row.resource_id,
                 owner_tenant_id=row.owner_tenant_id, tenant_id=row.tenant_id,
                 permission=SharePermission(row.permission), created_by=row.created_by,
                 created_at=aware(row.created_at))


class SqlShareRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def upsert(self, resource_type: str, resource_id: str, owner_tenant_id: int, tenant_id: int,
                     permission: SharePermission, created_by: str | None) -> Share:
        async with self._sessions.begin() as s:
            row = (await s.execute(select(ShareRow).where(
                ShareRow.resource_type == resource_type, ShareRow.resource_id == resource_id,
                ShareRow.tenant_id == tenant_id))).scalars().first()
            if row is None:
                row = ShareRow(id=new_id(), resource_type=resource_type, resource_id=resource_id,
                               owner_tenant_id=owner_tenant_id, tenant_id=tenant_id,
                               permission=permission.value, created_by=created_by)
                s.add(row)
            else:
                row.permission = permission.value
            await s.flush()
            await s.refresh(row)
            return _share(row)

    async def of_resource(self, resource_type: str, resource_id: str, owner_tenant_id: int) -> list[Share]:
        async with self._sessions() as s:
            rows = (await s.execute(select(ShareRow).where(
                ShareRow.resource_type == resource_type, ShareRow.resource_id == resource_id,
                ShareRow.owner_tenant_id == owner_tenant_id).order_by(ShareRow.created_at))).scalars().all()
        return [_share(r) for r in rows]

    async def received(self, tenant_id: int, resource_type: str) -> list[Share]:
        async with self._sessions() as s:
            rows = (await s.execute(select(ShareRow).where(
                ShareRow.tenant_id == tenant_id, ShareRow.resource_type == resource_type)
                .order_by(ShareRow.created_at))).scalars().all()
        return [_share(r) for r in rows]

    async def grant(self, resource_type: str, resource_id: str, tenant_id: int) -> Share | None:
        async with self._sessions() as s:
            row = (await s.execute(select(ShareRow).where(
                ShareRow.resource_type == resource_type, ShareRow.resource_id == resource_id,
                ShareRow.tenant_id == tenant_id))).scalars().first()
        return None if row is None else _share(row)

    async def delete(self, share_id: str, owner_tenant_id: int) -> bool:
        async with self._sessions.begin() as s:
            res = await s.execute(delete(ShareRow).where(ShareRow.id == share_id,
                                                         ShareRow.owner_tenant_id == owner_tenant_id))
            return bool(res.rowcount)  # type: ignore[attr-defined]
