"""Tenants and API keys on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Column, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import aware
from knora.adapters.db.tables import ApiKeyRow, AuditRow, Base, TenantRow
from knora.domain.access import ApiKey, KeyGrant, Role
from knora.domain.common import new_id
from knora.domain.models import Tenant
from knora.ports.tenant_store import StoredKey


def _tenant(row: TenantRow) -> Tenant:
    return Tenant(id=row.id, name=row.name, description=row.description,
                  retrieval_config=row.retrieval_config or {}, created_at=aware(row.created_at),
                  updated_at=aware(row.updated_at))


def _key(row: ApiKeyRow) -> ApiKey:
    return ApiKey(id=row.id, tenant_id=row.tenant_id, name=row.name, prefix=row.prefix, role=Role(row.role),
                  expires_at=aware(row.expires_at), last_used_at=aware(row.last_used_at),
                  created_by=row.created_by, created_at=aware(row.created_at))


def _tenant_columns() -> list[Column[int]]:
    """The ``tenant_id`` column of every table that has one without a foreign key to ``tenants`` (the
    database does not cascade those), the audit log excepted: it outlives the tenant."""
    found = []
    for table in reversed(Base.metadata.sorted_tables):  # children before parents
        col = table.columns.get("tenant_id")
        if col is None or table.name == AuditRow.__tablename__ or col.foreign_keys:
            continue
        found.append(col)
    return found


class SqlTenantRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def key_grant(self, key_hash: str) -> KeyGrant | None:
        async with self._sessions() as s:
            row = (await s.execute(select(ApiKeyRow.id, ApiKeyRow.tenant_id, ApiKeyRow.role, ApiKeyRow.prefix,
                                          ApiKeyRow.expires_at)
                                   .where(ApiKeyRow.key_hash == key_hash))).first()
        if row is None:
            return None
        return KeyGrant(key_id=row[0], tenant_id=int(row[1]), role=Role(row[2]), prefix=row[3],
                        expires_at=aware(row[4]))

    async def touch_keys(self, key_ids: Sequence[str], when: datetime) -> None:
        if key_ids:
            async with self._sessions.begin() as s:
                await s.execute(update(ApiKeyRow).where(ApiKeyRow.id.in_(list(key_ids)))
                                .values(last_used_at=when))

    async def create_key(self, tenant_id: int, name: str, key_hash: str, key_prefix: str, role: Role,
                         expires_at: datetime | None, created_by: str | None) -> ApiKey:
        async with self._sessions.begin() as s:
            row = ApiKeyRow(id=new_id(), tenant_id=tenant_id, name=name, key_hash=key_hash, prefix=key_prefix,
                            role=role.value, expires_at=expires_at, created_by=created_by)
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return _key(row)

    async def list_keys(self, tenant_id: int) -> list[ApiKey]:
        async with self._sessions() as s:
            rows = (await s.execute(select(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id)
                                    .order_by(ApiKeyRow.created_at.desc(), ApiKeyRow.id))).scalars().all()
        return [_key(r) for r in rows]

    async def rename_key(self, tenant_id: int, key_id: str, name: str) -> ApiKey | None:
        async with self._sessions.begin() as s:
            row = await s.get(ApiKeyRow, key_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            row.name = name
            return _key(row)

    async def delete_key(self, tenant_id: int, key_id: str) -> str | None:
        async with self._sessions.begin() as s:
            row = await s.get(ApiKeyRow, key_id)
            if row is None or row.tenant_id != tenant_id:
                return None
            digest = row.key_hash
            await s.delete(row)
            return digest

    async def tenants(self, ids: Sequence[int]) -> list[Tenant]:
        if not ids:
            return []
        async with self._sessions() as s:
            rows = (await s.execute(select(TenantRow).where(TenantRow.id.in_(list(ids)))
                                    .order_by(TenantRow.id))).scalars().all()
        return [_tenant(r) for r in rows]

    async def all_tenants(self) -> list[Tenant]:
        async with self._sessions() as s:
            rows = (await s.execute(select(TenantRow).order_by(TenantRow.id))).scalars().all()
        return [_tenant(r) for r in rows]

    async def create_tenant(self, name: str, description: str) -> Tenant:
        async with self._sessions.begin() as s:
            row = TenantRow(name=name, description=description, retrieval_config={})
            s.add(row)
            await s.flush()
            await s.refresh(row)
            return _tenant(row)

    async def update(self, tenant_id: int, name: str | None, description: str | None) -> Tenant | None:
        async with self._sessions.begin() as s:
            row = await s.get(TenantRow, tenant_id)
            if row is None:
                return None
            if name is not None:
                row.name = name
            if description is not None:
                row.description = description
            await s.flush()
            await s.refresh(row)
            return _tenant(row)

    async def delete(self, tenant_id: int) -> bool:
        async with self._sessions.begin() as s:
            for col in _tenant_columns():
                await s.execute(delete(col.table).where(col == tenant_id))
            res = await s.execute(delete(TenantRow).where(TenantRow.id == tenant_id))
            return bool(res.rowcount)  # type: ignore[attr-defined]

    async def set_retrieval_config(self, tenant_id: int, config: dict[str, object]) -> bool:
        async with self._sessions.begin() as s:
            row = await s.get(TenantRow, tenant_id)
            if row is None:
                return False
            row.retrieval_config = dict(config)
        return True

    async def get(self, tenant_id: int) -> Tenant | None:
        async with self._sessions() as s:
            row = await s.get(TenantRow, tenant_id)
            return None if row is None else _tenant(row)

    async def create(self, name: str, key_hash: str, key_prefix: str) -> int:
        async with self._sessions.begin() as s:
            row = TenantRow(name=name, retrieval_config={})
            s.add(row)
            await s.flush()
            s.add(ApiKeyRow(id=new_id(), tenant_id=row.id, key_hash=key_hash, prefix=key_prefix))
            return int(row.id)

    async def ensure_default(self, name: str, key_hash: str | None, key_prefix: str,
                             generated_hash: str, generated_prefix: str) -> tuple[int, bool]:
        async with self._sessions.begin() as s:
            row = (await s.execute(select(TenantRow).order_by(TenantRow.id).limit(1))).scalar_one_or_none()
            if row is None:
                row = TenantRow(name=name, retrieval_config={})
                s.add(row)
                await s.flush()
            tenant_id = int(row.id)
            if key_hash:
                exists = (await s.execute(select(ApiKeyRow).where(ApiKeyRow.key_hash == key_hash))).first()
                if not exists:
                    s.add(ApiKeyRow(id=new_id(), tenant_id=tenant_id, key_hash=key_hash, prefix=key_prefix))
                return tenant_id, False
            any_key = (await s.execute(select(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id))).first()
            if any_key:
                return tenant_id, False
            s.add(ApiKeyRow(id=new_id(), tenant_id=tenant_id, key_hash=generated_hash,
                            prefix=generated_prefix))
            return tenant_id, True

    async def replace_named_key(self, tenant_id: int, name: str, key_hash: str, key_prefix: str) -> None:
        async with self._sessions.begin() as s:
            await s.execute(delete(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id, ApiKeyRow.name == name,
                                                    ApiKeyRow.key_hash != key_hash))
            exists = (await s.execute(select(ApiKeyRow.id).where(ApiKeyRow.key_hash == key_hash))).first()
            if not exists:
                s.add(ApiKeyRow(id=new_id(), tenant_id=tenant_id, name=name, key_hash=key_hash,
                                prefix=key_prefix))

    async def keys(self, tenant_id: int) -> list[StoredKey]:
        async with self._sessions() as s:
            rows = (await s.execute(select(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id)
                                    .order_by(ApiKeyRow.created_at, ApiKeyRow.id))).scalars().all()
        return [StoredKey(id=r.id, name=r.name, prefix=r.prefix, key_hash=r.key_hash, created_at=r.created_at)
                for r in rows]

    async def revoke(self, key_ids: Sequence[str]) -> int:
        if not key_ids:
            return 0
        async with self._sessions.begin() as s:
            res = await s.execute(delete(ApiKeyRow).where(ApiKeyRow.id.in_(list(key_ids))))
            return int(res.rowcount)  # type: ignore[attr-defined]
