"""The knowledge-graph port: entities and relations per knowledge base, searched by entity name (spec §2.8).

Extraction at ingestion and a Neo4j adapter are later work; ``knora/adapters/graph/sql_graph.py`` stores the
graph in the metadata database (tables ``graph_entities`` / ``graph_relations``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class GraphNode(BaseModel):
    name: str
    type: str = ""
    description: str = ""
    attributes: list[str] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)
    knowledge_id: str = ""
    knowledge_base_id: str = ""


class GraphRelation(BaseModel):
    source: str
    target: str
    type: str = ""
    description: str = ""
    weight: float = 1.0
    chunk_ids: list[str] = Field(default_factory=list)


class GraphQueryResult(BaseModel):
    nodes: list[GraphNode] = Field(default_factory=list)
    relations: list[GraphRelation] = Field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()


@runtime_checkable
class GraphStore(Protocol):
    async def add(self, tenant_id: int, knowledge_base_id: str, nodes: Sequence[GraphNode],
                  relations: Sequence[GraphRelation], *, knowledge_id: str = "") -> None:
        """Merge nodes by name within the KB (chunk ids unioned); relations appended."""
        ...

    async def search_nodes(self, tenant_id: int, knowledge_base_ids: Sequence[str], names: Sequence[str],
                           *, knowledge_ids: Sequence[str] = ()) -> GraphQueryResult:
        """Nodes whose name contains any of ``names`` (case-insensitive), plus relations touching them."""
        ...

    async def has_graph(self, tenant_id: int, knowledge_base_ids: Sequence[str]) -> list[str]:
        """The subset of ``knowledge_base_ids`` that hold at least one entity."""
        ...

    async def delete_knowledge(self, knowledge_id: str) -> None: ...

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None: ...
