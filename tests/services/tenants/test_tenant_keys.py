"""Issue 20 item 11: starts without ``KNORA_API_KEY`` do not pile up keys, the UI key of a previous process is
revoked when a new one is made, and the stored plaintext prefix gives away little (none of a chosen key)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from knora.adapters.db.tables import ApiKeyRow
from knora.services.tenants.service import UI_KEY_NAME, hash_key
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


async def test_a_chosen_key_stores_no_plaintext(make_settings: Callable[..., Settings], db_url: str) -> None:
    chosen = "sk-correct-horse-battery-staple"
    async with started(make_settings(database_url=db_url, api_key=chosen), RECORDING) as c:
        (row,) = [k for k in await _keys(c) if k.key_hash == hash_key(chosen)]
        assert row.prefix == ""
        _tenant, key = await c.tenants.create("acme", "sk-acme-chosen")
        assert key == "sk-acme-chosen"
        assert not [k for k in await _keys(c) if k.key_hash == hash_key(key)][0].prefix
