"""Store tests run on containers wired with the store-api area only (no retrieval engine: that has its own
suite, and its PostgreSQL engine needs pgvector, which is not what these tests are about)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.container import Container
from knora.settings import Settings


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    c = Container(make_settings(database_url=db_url))
    await c.start(wiring=("knora.services.ingest.wiring",))
    try:
        yield c
    finally:
        await c.close()
