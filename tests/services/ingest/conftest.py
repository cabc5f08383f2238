"""Containers wired with the store-api area only, so these tests exercise ingestion itself; the writes that
would reach a retrieval engine are captured by ``RecordingRetrieval`` (see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.container import Container
from knora.settings import Settings

INGEST_ONLY = ("knora.services.ingest.wiring",)


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    c = Container(make_settings(database_url=db_url))
    await c.start(wiring=INGEST_ONLY)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def sqlite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Any]:
    c = Container(make_settings())
    await c.start(wiring=INGEST_ONLY)
    try:
        yield c
    finally:
        await c.close()
