"""Store tests run on services whose retrieval engine only records (the engines have their own suite, and the
PostgreSQL engine needs pgvector, which is not what these tests are about)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from knora.settings import Settings
from tests.conftest import RECORDING, started


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    async with started(make_settings(database_url=db_url), RECORDING) as c:
        yield c
