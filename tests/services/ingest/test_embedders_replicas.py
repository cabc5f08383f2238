"""Two running services on one database, as two replicas are: an embedding ``/models`` row created, changed or
deleted through one is what the other embeds with at its next lookup, never a stale copy or, silently, the
default embedder (issue 16 item 7)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knora.settings import Settings
from tests.conftest import RECORDING, started

pytestmark = pytest.mark.integration


async def test_model_rows_are_read_through_across_processes(make_settings: Callable[..., Settings],
                                                             db_url: str) -> None:
    async with started(make_settings(database_url=db_url), RECORDING) as a, \
            started(make_settings(database_url=db_url), RECORDING) as b:
        tenant = a.default_tenant_id
        row = await a.model_service.create(tenant, {
            "name": "local:hash", "type": "Embedding", "source": "local", "parameters": {"dimension": 64}})
        first = await b.embedders.get(row.id, tenant_id=tenant)
        assert first is not b.embedders.default  # not the warned-about fallback: b reads the row a wrote
        assert await b.embedders.get(row.id, tenant_id=tenant) is first  # unchanged row: the same instance
        kb = await a.kb_service.create(tenant, {"name": "shared", "embedding_model_id": row.id})
        query_a = await (await a.embedders.get(kb.embedding_model_id, tenant_id=tenant)).embed_query("fox")
        query_b = await first.embed_query("fox")
        assert query_a.tolist() == query_b.tolist()  # both replicas embed the knowledge base alike

        await a.model_service.update(tenant, row.id, {"description": "changed through a"})
        assert await b.embedders.get(row.id, tenant_id=tenant) is not first  # rebuilt from the new row

        await a.model_service.delete(tenant, row.id)
        assert await b.embedders.get(row.id, tenant_id=tenant) is b.embedders.default
