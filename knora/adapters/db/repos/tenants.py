"""Tenants and API keys on SQLAlchemy (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.tables import ApiKeyRow, TenantRow
from knora.domain.common import new_id
from knora.domain.models import Tenant
from knora.ports.tenant_store import StoredKey


class SqlTenantRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def tenant_of_key(self, key_hash: str) -> int | None:
        async with self._sessions() as s:
            row = (await s.execute(select(ApiKeyRow.tenant_id).where(ApiKeyRow.key_hash == key_hash))).first()
        return None if row is None else int(row[0])

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
            if row is None:
                return None
            return Tenant(id=row.id, name=row.name, description=row.description,
                          retrieval_config=row.retrieval_config or {}, created_at=row.created_at,
                          updated_at=row.updated_at)

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
