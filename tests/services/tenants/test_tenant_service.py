"""API keys: hashed, looked up once, shared by concurrent first requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event

from knora.adapters.db.repos.tenants import SqlTenantRepo
from knora.services.tenants.service import TenantService
from knora.settings import Settings
from tests.conftest import TEST_API_KEY

pytestmark = pytest.mark.integration


async def test_a_thousand_concurrent_first_requests_are_one_lookup(make_settings: Callable[...,
                                                                                           Settings]) -> None:
    from tests.conftest import started

    async with started(make_settings()) as c:
        queries: list[str] = []
        event.listen(c.db.sync_engine, "before_cursor_execute",
                     lambda conn, cursor, statement, *a: queries.append(statement))
        tenants = TenantService(SqlTenantRepo(c.sessions))  # a fresh service: nothing cached yet
        found = await asyncio.gather(*(tenants.authenticate(TEST_API_KEY) for _ in range(1000)))
        assert set(found) == {c.default_tenant_id}
        def lookups() -> list[str]:  # not the write of the key's last use
            return [q for q in queries if "api_keys" in q.lower() and q.lstrip().upper().startswith("SELECT")]
        assert len(lookups()) == 1
        assert await tenants.authenticate(TEST_API_KEY) == c.default_tenant_id  # from memory now
        assert len(lookups()) == 1

        unknown = await asyncio.gather(*(tenants.authenticate("sk-nobody") for _ in range(50)))
        assert unknown == [None] * 50
        _, key = await tenants.create("later")  # an unknown key is not remembered as unknown
        assert await tenants.authenticate(key) is not None
        assert await tenants.authenticate("") is None


async def test_a_failed_lookup_fails_every_waiter_and_the_next_request_tries_again(
        make_settings: Callable[..., Settings]) -> None:
    from tests.conftest import started

    async with started(make_settings()) as c:
        calls = 0

        class Broken:
            """A session factory whose first session fails once the lookup is under way (the database went
            away)."""

            def __call__(self) -> Any:
                nonlocal calls
                calls += 1
                failing, real = calls == 1, c.sessions()

                class Session:
                    async def __aenter__(self) -> Any:
                        await asyncio.sleep(0.01)
                        if failing:
                            raise ConnectionError("database down")
                        return await real.__aenter__()

                    async def __aexit__(self, *exc: object) -> None:
                        if not failing:
                            await real.__aexit__(*exc)

                return Session()

        tenants = TenantService(SqlTenantRepo(Broken()))  # type: ignore[arg-type]
        results = await asyncio.gather(*(tenants.authenticate(TEST_API_KEY) for _ in range(5)),
                                       return_exceptions=True)
        assert all(isinstance(r, ConnectionError) for r in results)
        assert calls == 1  # one lookup, shared
        assert await tenants.authenticate(TEST_API_KEY) == c.default_tenant_id
        assert calls == 2
