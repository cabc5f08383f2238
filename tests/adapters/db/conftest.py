"""Store tests run on containers wired with the store-api area only (no retrieval engine: that has its own
suite, and its PostgreSQL engine needs pgvector, which is not what these tests are about)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.root import build_services
from knora.settings import Settings
from tests.conftest import RECORDING


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    c = await build_services(make_settings(database_url=db_url), RECORDING)
    try:
        yield c
    finally:
        await c.aclose()
