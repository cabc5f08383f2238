"""HTTP clients over running services whose engine records its writes (``store_client`` runs on SQLite and
PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from knora.adapters.retrieval.sqlite import SqliteEngine
from knora.root import Overrides, Services
from knora.settings import Settings
from tests.conftest import RECORDING, client_for, started


@pytest.fixture
async def store_container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Services]:
    settings = make_settings(database_url=db_url, allow_private_network_fetch=True, max_upload_bytes=50_000)
    async with started(settings, RECORDING) as c:
        yield c


@pytest.fixture
async def store_client(store_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(store_container) as http:
        yield http


@pytest.fixture
async def lite_container(make_settings: Callable[..., Settings]) -> AsyncIterator[Services]:
    async with started(make_settings(max_upload_bytes=50_000)) as c:
        yield c


@pytest.fixture
async def lite_client(lite_container: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(lite_container) as http:
        yield http


@pytest.fixture
async def search_container(make_settings: Callable[..., Settings], db_url: str, db_backend: str,
                           tmp_path: Path) -> AsyncIterator[Services]:
    """Services on each metadata store with a real retrieval engine: the embedded one on SQLite, and on
    PostgreSQL (whose server here may lack pgvector) the SQLite engine in a file of its own (the PostgreSQL
    engine is tested on its own in tests/adapters/retrieval)."""
    overrides = (Overrides(engine=lambda _s: SqliteEngine(tmp_path / "retrieval.db"))
                 if db_backend != "sqlite" else None)
    async with started(make_settings(database_url=db_url), overrides) as c:
        yield c
