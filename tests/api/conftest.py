"""HTTP clients over containers wired with the store-api area only (``store_client`` runs on SQLite and
PostgreSQL); other areas' routers are mounted as usual but their services are not needed by these tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from knora.container import Container
from knora.settings import Settings
from tests.conftest import TEST_API_KEY

STORE_ONLY = ("knora.services.ingest.wiring",)


def http_for(c: Any, **headers: str) -> httpx.AsyncClient:
    from knora.api.app import create_app

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(container=c)),
                             base_url="http://knora.test",
                             headers={"X-API-Key": TEST_API_KEY, **headers}, timeout=60)


@pytest.fixture
async def store_container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    c = Container(make_settings(database_url=db_url, allow_private_network_fetch=True,
                                max_upload_bytes=50_000))
    await c.start(wiring=STORE_ONLY)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def store_client(store_container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with http_for(store_container) as http:
        yield http


@pytest.fixture
async def lite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    c = Container(make_settings(max_upload_bytes=50_000))
    await c.start(wiring=STORE_ONLY)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def lite_client(lite_container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with http_for(lite_container) as http:
        yield http
