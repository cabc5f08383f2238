"""Issue 20 item 11: starts without ``KNORA_API_KEY`` do not pile up keys, the UI key of a previous process is
revoked when a new one is made, and the stored plaintext prefix gives away little (none of a chosen key)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select, update

from knora.adapters.db.tables import ApiKeyRow
from knora.services.tenants.service import CLI_KEY_NAME, UI_KEY_NAME, hash_key
from knora.settings import Settings
from tests.conftest import RECORDING, started

pytestmark = pytest.mark.integration


async def _keys(c: Any) -> list[ApiKeyRow]:
    async with c.sessions() as s:
        return list((await s.execute(select(ApiKeyRow).order_by(ApiKeyRow.created_at))).scalars().all())


async def test_two_starts_without_a_key_store_one_key(make_settings: Callable[..., Settings],
                                                      db_url: str) -> None:
    settings = make_settings(database_url=db_url, api_key=None)
    async with started(settings, RECORDING) as first:
        generated = first.generated_api_key
        assert generated is not None
        assert generated.startswith("sk-")
    async with started(settings, RECORDING) as second:
        assert second.generated_api_key is None  # printed once, on the first start only
        keys = await _keys(second)
        assert len(keys) == 1
        assert keys[0].prefix == generated[:7]  # "sk-" and 4 characters, not 8
        assert await second.tenants.authenticate(generated) == second.default_tenant_id


async def test_each_process_ui_key_revokes_the_last(make_settings: Callable[..., Settings],
                                                    db_url: str) -> None:
    settings = make_settings(database_url=db_url, api_key=None)
    async with started(settings, RECORDING) as first:
        old = await first.tenants.ui_key(None)
        assert await first.tenants.ui_key(None) == old  # one per process
    async with started(settings, RECORDING) as second:
        new = await second.tenants.ui_key(None)
        assert new != old
        assert await second.tenants.authenticate(new) == second.default_tenant_id
        assert await second.tenants.authenticate(old) is None
        keys = await _keys(second)
        assert len(keys) == 2  # the start key and one UI key
        assert [k.name for k in keys].count(UI_KEY_NAME) == 1


async def test_the_cli_key_is_kept_while_valid_and_one_at_most(make_settings: Callable[..., Settings],
                                                               db_url: str) -> None:
    settings = make_settings(database_url=db_url, api_key=None)
    async with started(settings, RECORDING) as first:
        key, new = await first.tenants.cli_key(None)
        assert new
        assert await first.tenants.authenticate(key) == first.default_tenant_id
    async with started(settings, RECORDING) as second:
        assert await second.tenants.cli_key(key) == (key, False)  # a restart keeps the data dir's key
        replaced, new = await second.tenants.cli_key("sk-not-a-key-of-this-database")
        assert new
        assert replaced != key
        assert await second.tenants.authenticate(replaced) == second.default_tenant_id
        keys = await _keys(second)
        assert [k.name for k in keys].count(CLI_KEY_NAME) == 1  # the new key revoked the last
        assert hash_key(key) not in {k.key_hash for k in keys}
        assert all(replaced not in (k.prefix, k.key_hash) for k in keys)  # stored hashed


async def test_a_chosen_key_stores_no_plaintext(make_settings: Callable[..., Settings], db_url: str) -> None:
    chosen = "sk-correct-horse-battery-staple"
    async with started(make_settings(database_url=db_url, api_key=chosen), RECORDING) as c:
        (row,) = [k for k in await _keys(c) if k.key_hash == hash_key(chosen)]
        assert row.prefix == ""
        _tenant, key = await c.tenants.create("acme", "sk-acme-chosen")
        assert key == "sk-acme-chosen"
        assert not [k for k in await _keys(c) if k.key_hash == hash_key(key)][0].prefix


async def _old_release_row(c: Any, tenant_id: int, key: str, at: datetime) -> None:
    """A key as releases before issue 20 item 11 stored it: the column's default name, 8 characters."""
    async with c.sessions.begin() as s:
        s.add(ApiKeyRow(id=str(uuid.uuid4()), tenant_id=tenant_id, key_hash=hash_key(key), prefix=key[:8],
                        created_at=at))


class TestLegacyUiKeys:
    async def test_a_start_revokes_old_ui_keys_and_keeps_the_first_start_key(
            self, make_settings: Callable[..., Settings], db_url: str) -> None:
        settings = make_settings(database_url=db_url, api_key=None)
        async with started(settings, RECORDING) as first:
            first_key = first.generated_api_key  # the first start's key, printed once
            assert first_key is not None
            async with first.sessions.begin() as s:  # stored as an old release stored it
                await s.execute(update(ApiKeyRow).values(prefix=first_key[:8],
                                                         created_at=datetime(2026, 1, 1, tzinfo=UTC)))
            tenant = first.default_tenant_id
            old_ui = [f"sk-old-ui-key-{i}" for i in range(3)]  # one per start of an old release
            for i, key in enumerate(old_ui):
                await _old_release_row(first, tenant, key, datetime(2026, 2, 1 + i, tzinfo=UTC))
            other, other_key = await first.tenants.create("acme")
            await _old_release_row(first, other.id, "sk-acme-old-key", datetime(2026, 3, 1, tzinfo=UTC))
            ui_now = await first.tenants.ui_key(None)  # this release's UI key (named "ui")
            assert await first.tenants.authenticate(old_ui[0]) == tenant
        async with started(settings, RECORDING) as second:
            for key in old_ui:
                assert await second.tenants.authenticate(key) is None
            assert await second.tenants.authenticate(first_key) == tenant
            assert await second.tenants.authenticate(ui_now) == tenant  # replaced by the next UI key only
            assert await second.tenants.authenticate(other_key) == other.id
            assert await second.tenants.authenticate("sk-acme-old-key") == other.id  # another tenant's
            assert await second.tenants.revoke_legacy_ui_keys(None) == 0  # once is enough

    async def test_the_configured_key_is_kept_even_in_the_old_shape(
            self, make_settings: Callable[..., Settings], db_url: str) -> None:
        chosen = "sk-operator-chosen-key"
        async with started(make_settings(database_url=db_url, api_key="first-operator-key"), RECORDING) as c:
            await _old_release_row(c, c.default_tenant_id, chosen, datetime(2027, 1, 1, tzinfo=UTC))
            await _old_release_row(c, c.default_tenant_id, "sk-old-ui-key", datetime(2027, 1, 2, tzinfo=UTC))
        async with started(make_settings(database_url=db_url, api_key=chosen), RECORDING) as c:
            assert await c.tenants.authenticate(chosen) == c.default_tenant_id
            assert await c.tenants.authenticate("first-operator-key") == c.default_tenant_id
            assert await c.tenants.authenticate("sk-old-ui-key") is None


async def test_a_key_revoked_through_one_replica_is_refused_by_another_within_seconds(
        make_settings: Any, db_url: str) -> None:
    """Two running services on one database: B has the key cached; A revokes it; B refuses it once its cached
    confirmation is KEY_RECHECK_SECONDS old (issue 14: revocation on every replica within a second)."""
    from knora.services.tenants.service import KEY_RECHECK_SECONDS
    from tests.polling import eventually

    async with started(make_settings(database_url=db_url), RECORDING) as a, \
            started(make_settings(database_url=db_url), RECORDING) as b:
        tenant, key = await a.tenants.create("team")
        assert await b.tenants.authenticate(key) == tenant.id  # cached in B
        stored = await a.tenants._repo.keys(tenant.id)
        assert await a.tenants._repo.revoke([k.id for k in stored]) == len(stored)

        async def refused() -> bool:
            return await b.tenants.authenticate(key) is None

        loop = asyncio.get_running_loop()
        revoked_at = loop.time()
        assert await eventually(refused, timeout=10)
        assert loop.time() - revoked_at < KEY_RECHECK_SECONDS + 5  # bounded by the recheck, with slack
