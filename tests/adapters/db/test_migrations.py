"""The Alembic revisions build exactly the schema that tables.py declares, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Select, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from knora.adapters.db.engine import alembic_config, make_engine, migrate
from knora.adapters.db.repos.messages import incomplete_query
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
            # the newest migration, whichever it is (a single head: a merge that forks the chain fails here)
            assert version == ScriptDirectory.from_config(alembic_config()).get_current_head()
        finally:
            await engine.dispose()

    async def test_0003_binds_existing_kbs_to_local_storage(self, db_url: str) -> None:
        """Knowledge bases made before 0003 get what Knora always gave them (local files) and the built-in
        chat model's id where they named none; a chosen model is kept."""
        engine = make_engine(db_url)
        try:
            async with engine.begin() as conn:
                # at 0002 whatever the database held (the PostgreSQL one is shared by the session's tests)
                await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0002"))
                await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0002"))
                await conn.exec_driver_sql(
                    "INSERT INTO tenants (id, name, description, retrieval_config, created_at, updated_at) "
                    "VALUES (1, 't', '', '{}', '2026-01-01', '2026-01-01')")
                for kb_id, summary in (("kb-a", ""), ("kb-b", "3f1c9a8e-0000-4000-8000-000000000000")):
                    await conn.exec_driver_sql(
                        "INSERT INTO knowledge_bases (id, tenant_id, name, description, type, is_temporary, "
                        "chunking_config, embedding_model_id, summary_model_id, rerank_model_id, "
                        "indexing_strategy, retrieval_config, question_generation_config, extract_config, "
                        "vector_store_id, created_at, updated_at) VALUES "
                        f"('{kb_id}', 1, 'n', '', 'document', false, '{{}}', 'local:hash', '{summary}', '', "
                        "'{}', '{}', '{}', '{}', '', '2026-01-01', '2026-01-01')")
            await migrate(engine)
            async with engine.connect() as conn:
                rows = (await conn.exec_driver_sql(
                    "SELECT id, storage_provider_config, storage_backend_id, summary_model_id "
                    "FROM knowledge_bases ORDER BY id")).all()
            got = [(r[0], json.loads(r[1]) if isinstance(r[1], str) else r[1], r[2], r[3]) for r in rows]
            chosen = "3f1c9a8e-0000-4000-8000-000000000000"
            assert got == [("kb-a", {"provider": "local"}, "builtin-local", "builtin-chat"),
                           ("kb-b", {"provider": "local"}, "builtin-local", chosen)]
        finally:
            await engine.dispose()

    async def test_the_orphan_sweep_reads_the_partial_index(self, db_url: str) -> None:
        """The sweep's query (every lease TTL, on every replica) is answered from ``ix_messages_incomplete``
        rather than by scanning every message: the query repeats the index's predicate term for term."""
        engine = make_engine(db_url)
        try:
            await migrate(engine)
            async with engine.connect() as conn:
                plan = await _plan(conn, incomplete_query(older_than=datetime(2026, 1, 1, tzinfo=UTC)))
            assert "ix_messages_incomplete" in plan, plan
        finally:
            await engine.dispose()


async def _plan(conn: AsyncConnection, query: Select[Any]) -> str:
    compiled = query.compile(dialect=conn.dialect)
    params = tuple(compiled.params[name] for name in compiled.positiontup or ())
    if conn.dialect.name == "sqlite":  # the plan, not the value, matters: a string, as SQLite stores it
        params = tuple(p.isoformat() if isinstance(p, datetime) else p for p in params)
        rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", params)
        return "\n".join(str(r[-1]) for r in rows)
    await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a test table is too small to need one
    rows = await conn.exec_driver_sql(f"EXPLAIN {compiled}", params)
    return "\n".join(str(r[0]) for r in rows)
