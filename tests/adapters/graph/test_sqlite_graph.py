"""The SQL graph store on a real, migrated metadata database (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.adapters.graph.sqlite_graph import SqlGraphStore
from knora.ports.graph import GraphNode, GraphRelation

pytestmark = pytest.mark.integration


@pytest.fixture
async def graph(db_url: str) -> AsyncIterator[SqlGraphStore]:
    engine = make_engine(db_url)
    await migrate(engine)
    try:
        yield SqlGraphStore(make_sessionmaker(engine))
    finally:
        await engine.dispose()


async def test_add_merge_search_delete(graph: Any) -> None:
    g, t = graph, 1
    await g.add(t, "kb1", [GraphNode(name="Ada Lovelace", chunk_ids=["c1"]), GraphNode(name="Babbage")],
                [GraphRelation(source="Ada Lovelace", target="Babbage", type="worked_with")],
                knowledge_id="k1")
    await g.add(t, "kb1", [GraphNode(name="Ada Lovelace", chunk_ids=["c2", "c1"])], [], knowledge_id="k1")
    found = await g.search_nodes(t, ["kb1"], ["ada", "100%_"])
    assert [(n.name, n.chunk_ids) for n in found.nodes] == [("Ada Lovelace", ["c1", "c2"])]
    assert [(r.source, r.target) for r in found.relations] == [("Ada Lovelace", "Babbage")]
    assert (await g.search_nodes(t + 1, ["kb1"], ["ada"])).nodes == []
    assert await g.has_graph(t, ["kb1", "kb2"]) == ["kb1"]
    await g.delete_knowledge("k1")
    assert await g.has_graph(t, ["kb1"]) == []
    assert (await g.search_nodes(t, ["kb1"], ["Babbage"])).relations == []
