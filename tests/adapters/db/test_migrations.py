"""The Alembic revisions build exactly the schema that tables.py declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from knora.adapters.db.engine import make_engine, migrate
from knora.adapters.db.tables import metadata

pytestmark = pytest.mark.integration


def _diff(conn: Connection) -> list[object]:
    ctx = MigrationContext.configure(conn, opts={"compare_type": True})
    # Retrieval engines add their own index tables; only the metadata store's tables are compared.
    return [d for d in compare_metadata(ctx, metadata) if not (isinstance(d,
                                                                          tuple) and d[0] == "remove_table")]


class TestMigrations:
    async def test_upgrade_head_matches_tables(self, db_url: str) -> None:
        engine = make_engine(db_url)
        try:
            await migrate(engine)
            async with engine.connect() as conn:
                diff = await conn.run_sync(_diff)
                names = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
            assert diff == [], f"tables.py changed without a migration: {diff}"
            assert set(metadata.tables) <= names
        finally:
            await engine.dispose()

    async def test_upgrade_is_idempotent(self, db_url: str) -> None:
        engine = make_engine(db_url)
        try:
            await migrate(engine)
            await migrate(engine)
            async with engine.connect() as conn:
                version = (await conn.exec_driver_sql("SELECT version_num FROM alembic_version")).scalar_one()
            assert version == "0001"
        finally:
            await engine.dispose()
