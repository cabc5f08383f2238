"""The tenant repository on SQLite and PostgreSQL (``container`` is parametrised over both)."""

from __future__ import annotations

from typing import Any

import pytest

from knora.adapters.db.repos.tenants import SqlTenantRepo
from knora.services.tenants.service import DEFAULT_TENANT_NAME, hash_key


async def _tenant_of(repo: SqlTenantRepo, key: str) -> int | None:
    grant = await repo.key_grant(hash_key(key))
    return None if grant is None else grant.tenant_id

pytestmark = pytest.mark.integration


class TestSqlTenantRepo:
    async def test_keys_resolve_to_their_tenant_and_unknown_keys_to_none(self, container: Any) -> None:
        repo = SqlTenantRepo(container.sessions)
        tenant_id = await repo.create("acme", hash_key("sk-acme"), "sk-acme")
        assert await _tenant_of(repo, "sk-acme") == tenant_id
        assert await repo.key_grant(hash_key("sk-nobody")) is None
        tenant = await repo.get(tenant_id)
        assert tenant is not None
        assert tenant.name == "acme"
        assert await repo.get(tenant_id + 1000) is None

    async def test_ensure_default_is_idempotent_and_stores_a_generated_key_once(self, container: Any) -> None:
        repo = SqlTenantRepo(container.sessions)
        # the services already made the default tenant with the test key: nothing is generated again
        first = await repo.ensure_default(DEFAULT_TENANT_NAME, None, "", hash_key("sk-gen-1"), "sk-gen-1")
        assert first == (container.default_tenant_id, False)
        assert await repo.key_grant(hash_key("sk-gen-1")) is None
        # a configured key is added to the default tenant, once
        for _ in range(2):
            got = await repo.ensure_default(DEFAULT_TENANT_NAME, hash_key("sk-set"), "sk-set",
                                            hash_key("x"), "x")
            assert got == (container.default_tenant_id, False)
        assert await _tenant_of(repo, "sk-set") == container.default_tenant_id
