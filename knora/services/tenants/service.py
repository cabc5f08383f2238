"""Tenants and their API keys. Keys are stored as SHA-256 hashes; the plaintext is shown once."""

from __future__ import annotations

import asyncio
import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.tables import ApiKeyRow, TenantRow
from knora.domain.common import new_id
from knora.domain.models import Tenant

DEFAULT_TENANT_NAME = "default"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def generate_key() -> str:
    return "sk-" + secrets.token_urlsafe(32)


class TenantService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._cache: dict[str, int] = {}
        self._lookups: dict[str, asyncio.Future[int | None]] = {}  # keys being looked up: later askers wait
        self._ui_key: str | None = None

    async def authenticate(self, key: str) -> int | None:
        """The tenant of an API key. Known keys are answered from memory; concurrent first requests with one
        key share a single lookup (a thousand clients connecting at once are one query, not a thousand)."""
        if not key:
            return None
        digest = hash_key(key)
        if digest in self._cache:
            return self._cache[digest]
        pending = self._lookups.get(digest)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self._lookups[digest] = fut
        try:
            async with self._sessions() as s:
                row = (await s.execute(select(ApiKeyRow.tenant_id)
                                       .where(ApiKeyRow.key_hash == digest))).first()
            tenant_id = None if row is None else int(row[0])
            if tenant_id is not None:
                self._cache[digest] = tenant_id
            fut.set_result(tenant_id)
            return tenant_id
        except BaseException as exc:
            fut.set_exception(exc if isinstance(exc, Exception) else RuntimeError("lookup cancelled"))
            fut.exception()  # retrieved here, so an unawaited failure is not logged as never retrieved
            raise
        finally:
            self._lookups.pop(digest, None)

    async def get(self, tenant_id: int) -> Tenant | None:
        async with self._sessions() as s:
            row = await s.get(TenantRow, tenant_id)
            if row is None:
                return None
            return Tenant(id=row.id, name=row.name, description=row.description,
                          retrieval_config=row.retrieval_config or {}, created_at=row.created_at,
                          updated_at=row.updated_at)

    async def create(self, name: str, api_key: str | None = None) -> tuple[Tenant, str]:
        key = api_key or generate_key()
        async with self._sessions.begin() as s:
            row = TenantRow(name=name, retrieval_config={})
            s.add(row)
            await s.flush()
            s.add(ApiKeyRow(id=new_id(), tenant_id=row.id, key_hash=hash_key(key), prefix=key[:8]))
            tenant_id = row.id
        tenant = await self.get(tenant_id)
        assert tenant is not None
        return tenant, key

    async def ui_key(self, configured: str | None) -> str:
        """The key the local web UI logs in with: the configured key, else one generated on first use and
        added to the default tenant (kept for the life of the process; it is stored hashed only)."""
        if configured:
            return configured
        if self._ui_key is None:
            key = generate_key()
            await self.ensure_default(key)
            self._ui_key = key
        return self._ui_key

    async def ensure_default(self, api_key: str | None) -> tuple[int, str | None]:
        """The embedded profile's default tenant. Returns (tenant id, a newly generated key or None).

        With ``api_key`` set, that key is made valid for the default tenant. Without it, a key is generated
        once, on first start, and returned so the caller can print it."""
        async with self._sessions.begin() as s:
            row = (await s.execute(select(TenantRow).order_by(TenantRow.id).limit(1))).scalar_one_or_none()
            if row is None:
                row = TenantRow(name=DEFAULT_TENANT_NAME, retrieval_config={})
                s.add(row)
                await s.flush()
            tenant_id = row.id
            generated: str | None = None
            if api_key:
                exists = (await s.execute(select(ApiKeyRow)
                                          .where(ApiKeyRow.key_hash == hash_key(api_key)))).first()
                if not exists:
                    s.add(ApiKeyRow(id=new_id(), tenant_id=tenant_id, key_hash=hash_key(api_key),
                                    prefix=api_key[:8]))
            else:
                any_key = (await s.execute(select(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id))).first()
                if not any_key:
                    generated = generate_key()
                    s.add(ApiKeyRow(id=new_id(), tenant_id=tenant_id, key_hash=hash_key(generated),
                                    prefix=generated[:8]))
        return tenant_id, generated
