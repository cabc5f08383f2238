"""A cancelled document is not completed by a parse that finishes after the cancel (another replica's job, or
one that reached its commit before it could be stopped): ``replace_many`` treats it as gone."""

from __future__ import annotations

import pytest

from knora.domain.knowledge import Chunk, Knowledge, KnowledgeBase, ParseStatus
from knora.root import Services

pytestmark = pytest.mark.integration


class TestCancelledCommit:
    async def test_commit_is_refused_and_cancel_is_conditional(self, sqlite_container: Services) -> None:
        repos, tenant = sqlite_container.repos, sqlite_container.default_tenant_id
        kb = await repos.kbs.create(KnowledgeBase(tenant_id=tenant, name="Docs"))
        k = await repos.knowledge.create(Knowledge(tenant_id=tenant, knowledge_base_id=kb.id, title="a"))
        assert await repos.knowledge.cancel(k.id, "Parse cancelled") is True
        chunk = Chunk(tenant_id=tenant, knowledge_id=k.id, knowledge_base_id=kb.id, content="late",
                      chunk_index=0)
        done = await repos.chunks.replace_many([(k.id, [chunk], {"parse_status": "completed"})])
        assert done == {k.id: None}
        got = await repos.knowledge.get(tenant, k.id)
        assert got is not None
        assert got.parse_status == ParseStatus.CANCELLED
        assert await repos.chunks.ids_for_knowledge(k.id) == []
        # only a pending or processing document can be cancelled
        assert await repos.knowledge.cancel(k.id, "again") is False
        await repos.knowledge.set_status(k.id, ParseStatus.COMPLETED)
        assert await repos.knowledge.cancel(k.id, "late") is False
