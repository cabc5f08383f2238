"""Services whose retrieval engine records every write (``RecordingRetrieval``, tests/fakes/retrieval.py), so
these tests can assert what ingestion indexed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from knora.root import Services
from knora.settings import Settings
from tests.conftest import RECORDING, started


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Services]:
    async with started(make_settings(database_url=db_url), RECORDING) as c:
        yield c


@pytest.fixture
async def sqlite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings(), RECORDING) as c:
        yield c
