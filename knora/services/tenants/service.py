"""Tenants and their API keys. Keys are stored as SHA-256 hashes; the plaintext is shown once."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from datetime import UTC, datetime

from knora.domain.access import ApiKey, KeyGrant, Principal, Role
from knora.domain.errors import BadRequest, Forbidden, NotFound
from knora.domain.models import Tenant
from knora.ports.tenant_store import StoredKey, TenantRepo

log = logging.getLogger(__name__)

DEFAULT_TENANT_NAME = "default"
UI_KEY_NAME = "ui"  # the key the local web UI signs in with; a new one replaces the last
CLI_KEY_NAME = "cli"  # the key the CLI on the server's machine calls it with (knora/cli/discovery.py)
_GENERATED = "sk-"
# Before issue 20 item 11 every key was stored under the column's default name and with its first 8 characters
# as prefix; each process started without KNORA_API_KEY added its UI key that way, valid forever.
LEGACY_KEY_NAME = "default"
_LEGACY_PREFIX_LEN = 8


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def generate_key() -> str:
    return _GENERATED + secrets.token_urlsafe(32)


def key_prefix(key: str, *, generated: bool) -> str:
    """What is stored in plaintext to recognise a key in a listing: ``sk-`` and 4 random characters of a key
    Knora generated (24 bits of 256), nothing of a key an operator chose: its start may be a word, a name, or
    all there is to a weak key (issue 20 item 11; it used to be the first 8 characters of either)."""
    return key[:len(_GENERATED) + 4] if generated else ""


KEY_RECHECK_SECONDS = 1.0  # a cached API key is confirmed with the database again after this
TOUCH_SECONDS = 60.0  # a key's last use is written at most this often


class TenantService:
    def __init__(self, repo: TenantRepo) -> None:
        self._repo = repo
        # key digest → (tenant, when the database last confirmed it): re-confirmed after KEY_RECHECK_SECONDS,
        # so a key revoked through another replica stops working here within that time
        self._cache: dict[str, tuple[KeyGrant, float]] = {}
        self._lookups: dict[str, asyncio.Future[KeyGrant | None]] = {}  # keys being looked up: askers wait
        self._touched: dict[str, float] = {}  # key id → when its last use was last written
        self._ui_key: str | None = None
        self._default_id: int | None = None

    async def authenticate(self, key: str) -> int | None:
        """The tenant of a valid API key, or None."""
        grant = await self.grant(key)
        return None if grant is None else grant.tenant_id

    async def grant(self, key: str) -> KeyGrant | None:
        """What a valid (known, unexpired) API key grants. A key confirmed less than ``KEY_RECHECK_SECONDS``
        ago is answered from memory; concurrent lookups of one key share a single query (a thousand clients
        connecting at once are one query, not a thousand)."""
        if not key:
            return None
        digest = hash_key(key)
        cached = self._cache.get(digest)
        if cached is not None and time.monotonic() - cached[1] < KEY_RECHECK_SECONDS:
            return _unexpired(cached[0])
        pending = self._lookups.get(digest)
        if pending is not None:
            return _unexpired(await asyncio.shield(pending))
        fut: asyncio.Future[KeyGrant | None] = asyncio.get_running_loop().create_future()
        self._lookups[digest] = fut
        try:
            grant = await self._repo.key_grant(digest)
            if grant is not None:
                self._cache[digest] = (grant, time.monotonic())
                await self._touch(grant.key_id)
            else:
                self._cache.pop(digest, None)  # revoked (here or through another replica)
            fut.set_result(grant)
            return _unexpired(grant)
        except BaseException as exc:
            fut.set_exception(exc if isinstance(exc, Exception) else RuntimeError("lookup cancelled"))
            fut.exception()  # retrieved here, so an unawaited failure is not logged as never retrieved
            raise
        finally:
            self._lookups.pop(digest, None)

    async def _touch(self, key_id: str) -> None:
        """Records a key's last use, at most once per ``TOUCH_SECONDS`` per key and process."""
        now = time.monotonic()
        if now - self._touched.get(key_id, -TOUCH_SECONDS) < TOUCH_SECONDS:
            return
        self._touched[key_id] = now
        try:
            await self._repo.touch_keys([key_id], datetime.now(UTC))
        except Exception:
            log.warning("could not record the last use of an API key", exc_info=True)

    # --- keys managed through the API and the CLI -------------------------------------------------------
    async def create_key(self, tenant_id: int, name: str, role: Role, *, expires_at: datetime | None = None,
                         created_by: str | None = None, by_role: Role | None = None) -> tuple[ApiKey, str]:
        """A new key (and its plaintext, shown once). Nobody makes a key above their own role, and no key
        is an owner's (an owner key could delete the tenant)."""
        name = name.strip()
        if not name or len(name) > 255:
            raise BadRequest("name: 1–255 characters")
        if role is Role.OWNER:
            raise BadRequest("role: a key can be viewer, contributor or admin")
        if by_role is not None and not by_role.covers(role):
            raise Forbidden(f"A {by_role.value} cannot make a key with the {role.value} role")
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise BadRequest("expires_at: in the past")
        key = generate_key()
        created = await self._repo.create_key(tenant_id, name, hash_key(key), key_prefix(key, generated=True),
                                              role, expires_at, created_by)
        return created, key

    async def list_keys(self, tenant_id: int) -> list[ApiKey]:
        return await self._repo.list_keys(tenant_id)

    async def rename_key(self, tenant_id: int, key_id: str, name: str) -> ApiKey:
        name = name.strip()
        if not name or len(name) > 255:
            raise BadRequest("name: 1–255 characters")
        found = await self._repo.rename_key(tenant_id, key_id, name)
        if found is None:
            raise NotFound("No such API key")
        return found

    async def revoke_key(self, tenant_id: int, key_id: str) -> None:
        """Deletes the key: refused here at once, by other replicas within ``KEY_RECHECK_SECONDS``."""
        digest = await self._repo.delete_key(tenant_id, key_id)
        if digest is None:
            raise NotFound("No such API key")
        self._cache.pop(digest, None)

    # --- tenants ----------------------------------------------------------------------------------------
    async def tenants(self, ids: list[int]) -> list[Tenant]:
        return await self._repo.tenants(ids)

    async def all_tenants(self) -> list[Tenant]:
        return await self._repo.all_tenants()

    async def create_tenant(self, name: str, description: str = "") -> Tenant:
        name = name.strip()
        if not name or len(name) > 255:
            raise BadRequest("name: 1–255 characters")
        return await self._repo.create_tenant(name, description)

    async def update(self, tenant_id: int, name: str | None, description: str | None) -> Tenant:
        if name is not None and (not name.strip() or len(name) > 255):
            raise BadRequest("name: 1–255 characters")
        found = await self._repo.update(tenant_id, name.strip() if name else None, description)
        if found is None:
            raise NotFound("No such tenant")
        return found

    async def delete_rows(self, tenant_id: int) -> bool:
        """Deletes the tenant's rows (after its knowledge bases were deleted through their service)."""
        self._cache = {k: v for k, v in self._cache.items() if v[0].tenant_id != tenant_id}
        return await self._repo.delete(tenant_id)

    def key_principal(self, grant: KeyGrant) -> Principal:
        return Principal(tenant_id=grant.tenant_id, role=grant.role, key_id=grant.key_id,
                         key_prefix=grant.prefix)

    async def get(self, tenant_id: int) -> Tenant | None:
        return await self._repo.get(tenant_id)

    async def set_retrieval_config(self, tenant_id: int, config: dict[str, object]) -> bool:
        """Stores already validated settings (``knora.services.tenants.retrieval_settings``)."""
        return await self._repo.set_retrieval_config(tenant_id, config)

    async def create(self, name: str, api_key: str | None = None) -> tuple[Tenant, str]:
        key = api_key or generate_key()
        tenant = await self._repo.get(await self._repo.create(name, hash_key(key),
                                                              key_prefix(key, generated=not api_key)))
        assert tenant is not None
        return tenant, key

    async def ui_key(self, configured: str | None) -> str:
        """The key the local web UI logs in with: the configured key, else one generated on first use in this
        process (kept for its life; stored hashed only). It replaces the UI key of the previous process, which
        is revoked: every start used to add a key that stayed valid forever."""
        if configured:
            return configured
        if self._ui_key is None:
            key = generate_key()
            tenant_id = self._default_id
            if tenant_id is None:
                tenant_id, _ = await self.ensure_default(None)
            await self._repo.replace_named_key(tenant_id, UI_KEY_NAME, hash_key(key),
                                               key_prefix(key, generated=True))
            self._ui_key = key
        return self._ui_key

    async def cli_key(self, kept: str | None) -> tuple[str, bool]:
        """The default tenant's key for the CLI on this machine, and whether it is new. ``kept`` is the key
        the last server left in the data dir: still a key of the default tenant, it stays (every server on
        one data dir and database shares it, a restart does not break a running command); else a new one
        is generated and replaces the last CLI key, so at most one is ever valid. Stored hashed only."""
        tenant_id = self._default_id
        if tenant_id is None:
            tenant_id, _ = await self.ensure_default(None)
        if kept and await self.authenticate(kept) == tenant_id:
            return kept, False
        key = generate_key()
        await self._repo.replace_named_key(tenant_id, CLI_KEY_NAME, hash_key(key),
                                           key_prefix(key, generated=True))
        return key, True

    async def ensure_default(self, api_key: str | None) -> tuple[int, str | None]:
        """The embedded profile's default tenant. Returns (tenant id, a newly generated key or None).

        With ``api_key`` set, that key is made valid for the default tenant. Without it, a key is generated
        only when the default tenant has none (first start), and returned so the caller can print it."""
        generated = generate_key()
        tenant_id, stored = await self._repo.ensure_default(
            DEFAULT_TENANT_NAME, hash_key(api_key) if api_key else None,
            key_prefix(api_key, generated=False) if api_key else "",
            hash_key(generated), key_prefix(generated, generated=True))
        self._default_id = tenant_id
        return tenant_id, generated if stored else None

    async def revoke_legacy_ui_keys(self, configured: str | None) -> int:
        """At start: revokes the UI keys earlier releases minted per process, which this release never uses.

        Which rows those are: keys of the default tenant named ``default`` whose prefix has the old shape of a
        generated key (``sk-`` and 5 more characters; this release stores 4, and nothing of a chosen key) —
        except the tenant's oldest key, the key the first start generated and printed (old releases stored it
        before any UI key: it is the one stored key of the current design), and the configured
        ``KNORA_API_KEY``. Keys of this release (``ui``, 7-character or empty prefixes), other tenants' keys
        and other names are never touched. A key an operator once configured, that began with ``sk-``, is no
        longer configured and is not the oldest is indistinguishable from a UI key (only hashes are stored)
        and is revoked too. Returns how many were revoked; running it again revokes nothing."""
        tenant_id = self._default_id
        if tenant_id is None:
            tenant_id, _ = await self.ensure_default(configured)
        keys = await self._repo.keys(tenant_id)
        configured_hash = hash_key(configured) if configured else None
        stale = [k for k in keys[1:] if _legacy_generated(k) and k.key_hash != configured_hash]
        if not stale:
            return 0
        revoked = await self._repo.revoke([k.id for k in stale])
        for k in stale:
            self._cache.pop(k.key_hash, None)
        log.warning("revoked %d UI keys left by earlier releases (prefixes %s)", revoked,
                    ", ".join(k.prefix for k in stale))
        return revoked


def _unexpired(grant: KeyGrant | None) -> KeyGrant | None:
    if grant is None or (grant.expires_at is not None and grant.expires_at <= datetime.now(UTC)):
        return None
    return grant


def _legacy_generated(key: StoredKey) -> bool:
    return (key.name == LEGACY_KEY_NAME and len(key.prefix) == _LEGACY_PREFIX_LEN
            and key.prefix.startswith(_GENERATED))
