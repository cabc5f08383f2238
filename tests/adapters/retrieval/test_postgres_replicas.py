"""Two PostgreSQL engines on one database, as two replicas have them: vectors indexed through one are found
through the other, even when the other started before the first vector table existed (issue 16 item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from knora.adapters.retrieval import postgres
from knora.adapters.retrieval.postgres import PostgresEngine
from tests.adapters.retrieval.test_engine_contract import CORPUS, ids, vec, vq
from tests.conftest import fresh_database

pytestmark = [pytest.mark.pgvector, pytest.mark.integration]


async def test_a_replica_started_before_the_first_upload_serves_vector_hits(
        pgvector_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fresh_database(pgvector_server) as dsn:
        early, writer = PostgresEngine(dsn), PostgresEngine(dsn)
        await early.start()  # no vector table exists yet
        await writer.start()
        try:
            assert await early.search(vq(vec(0), top_k=2)) == []  # nothing indexed anywhere
            monkeypatch.setattr(postgres, "DIM_RECHECK_SECONDS", 0.0)  # the catalog is asked again at once
            await writer.index(CORPUS)
            assert ids(await early.search(vq(vec(0), top_k=2))) == ["c1", "c2"]
            assert ids(await writer.search(vq(vec(0), top_k=2))) == ["c1", "c2"]
        finally:
            await early.close()
            await writer.close()


async def test_a_missing_table_is_not_looked_up_on_every_search(
        pgvector_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fresh_database(pgvector_server) as dsn:
        eng = PostgresEngine(dsn)
        await eng.start()
        try:
            monkeypatch.setattr(postgres, "DIM_RECHECK_SECONDS", 3600.0)
            assert await eng.search(vq(vec(0), top_k=2)) == []
            checked = dict(eng._dims_checked)
            assert await eng.search(vq(vec(1), top_k=2)) == []
            assert eng._dims_checked == checked  # answered from the negative cache, no catalog query
        finally:
            await eng.close()
