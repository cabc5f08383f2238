"""GraphStore on the metadata database (``graph_entities`` / ``graph_relations``), SQLite or PostgreSQL.

Small graphs only — the embedded profile's answer to "the KB has a knowledge graph" without a Neo4j service.
Name matching is ``lower(name) LIKE %entity%`` (WeKnora's Neo4j query is ``name CONTAINS entity``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.tables import GraphEntityRow, GraphRelationRow
from knora.ports.graph import GraphNode, GraphQueryResult, GraphRelation


def _like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SqlGraphStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def add(self, tenant_id: int, knowledge_base_id: str, nodes: Sequence[GraphNode],
                  relations: Sequence[GraphRelation], *, knowledge_id: str = "") -> None:
        async with self._sessions() as s, s.begin():
            for node in nodes:
                existing = await s.scalar(select(GraphEntityRow).where(
                    GraphEntityRow.tenant_id == tenant_id,
                    GraphEntityRow.knowledge_base_id == knowledge_base_id,
                    GraphEntityRow.name == node.name,
                    GraphEntityRow.knowledge_id == (knowledge_id or node.knowledge_id)))
                if existing is not None:
                    existing.chunk_ids = list(dict.fromkeys([*(existing.chunk_ids or []), *node.chunk_ids]))
                    existing.description = existing.description or node.description
                    existing.type = existing.type or node.type
                    continue
                s.add(GraphEntityRow(id=str(uuid.uuid4()), tenant_id=tenant_id,
                                     knowledge_base_id=knowledge_base_id,
                                     knowledge_id=knowledge_id or node.knowledge_id, name=node.name,
                                     type=node.type,
                                     description=node.description, chunk_ids=list(node.chunk_ids)))
            for rel in relations:
                s.add(GraphRelationRow(id=str(uuid.uuid4()), tenant_id=tenant_id,
                                       knowledge_base_id=knowledge_base_id,
                                       source=rel.source, target=rel.target, type=rel.type,
                                       description=rel.description, weight=rel.weight,
                                       chunk_ids=list(rel.chunk_ids)))

    async def search_nodes(self, tenant_id: int, knowledge_base_ids: Sequence[str], names: Sequence[str],
                           *, knowledge_ids: Sequence[str] = ()) -> GraphQueryResult:
        terms = [n.strip().lower() for n in names if n and n.strip()]
        if not terms or not knowledge_base_ids:
            return GraphQueryResult()
        cond = or_(*[func.lower(GraphEntityRow.name).like(f"%{_like_escape(t)}%",
                                                          escape="\\") for t in terms])
        q = select(GraphEntityRow).where(GraphEntityRow.tenant_id == tenant_id,
                                         GraphEntityRow.knowledge_base_id.in_(list(knowledge_base_ids)), cond)
        if knowledge_ids:
            q = q.where(GraphEntityRow.knowledge_id.in_(list(knowledge_ids)))
        async with self._sessions() as s:
            rows = (await s.scalars(q.order_by(GraphEntityRow.name, GraphEntityRow.id))).all()
            nodes = [GraphNode(name=r.name, type=r.type, description=r.description,
                               chunk_ids=list(r.chunk_ids or []),
                               knowledge_id=r.knowledge_id,
                               knowledge_base_id=r.knowledge_base_id) for r in rows]
            found = sorted({n.name for n in nodes})
            rels: list[GraphRelation] = []
            if found:
                rq = select(GraphRelationRow).where(
                    GraphRelationRow.tenant_id == tenant_id,
                    GraphRelationRow.knowledge_base_id.in_(list(knowledge_base_ids)),
                    or_(GraphRelationRow.source.in_(found), GraphRelationRow.target.in_(found)))
                rels = [GraphRelation(source=r.source, target=r.target, type=r.type,
                                      description=r.description,
                                      weight=r.weight, chunk_ids=list(r.chunk_ids or []))
                        for r in (await s.scalars(rq.order_by(GraphRelationRow.source,
                                                              GraphRelationRow.id))).all()]
        return GraphQueryResult(nodes=nodes, relations=rels)

    async def has_graph(self, tenant_id: int, knowledge_base_ids: Sequence[str]) -> list[str]:
        if not knowledge_base_ids:
            return []
        async with self._sessions() as s:
            rows = await s.scalars(select(GraphEntityRow.knowledge_base_id).where(
                GraphEntityRow.tenant_id == tenant_id,
                GraphEntityRow.knowledge_base_id.in_(list(knowledge_base_ids))).distinct())
            present = set(rows.all())
        return [k for k in knowledge_base_ids if k in present]

    async def delete_knowledge(self, knowledge_id: str) -> None:
        async with self._sessions() as s, s.begin():
            kb_ids = set((await s.scalars(select(GraphEntityRow.knowledge_base_id).where(
                GraphEntityRow.knowledge_id == knowledge_id))).all())
            await s.execute(delete(GraphEntityRow).where(GraphEntityRow.knowledge_id == knowledge_id))
            for kb_id in kb_ids:  # relations whose endpoints are gone from the KB go too
                names = select(GraphEntityRow.name).where(GraphEntityRow.knowledge_base_id == kb_id)
                await s.execute(delete(GraphRelationRow).where(
                    GraphRelationRow.knowledge_base_id == kb_id,
                    or_(GraphRelationRow.source.not_in(names), GraphRelationRow.target.not_in(names))))

    async def delete_knowledge_base(self, knowledge_base_id: str) -> None:
        async with self._sessions() as s, s.begin():
            await s.execute(delete(GraphEntityRow)
                            .where(GraphEntityRow.knowledge_base_id == knowledge_base_id))
            await s.execute(delete(GraphRelationRow)
                            .where(GraphRelationRow.knowledge_base_id == knowledge_base_id))
