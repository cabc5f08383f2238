"""Custom agents. Built-in agents live in code; a tenant's edits of one are stored as a row keyed
``<builtin-id>@<tenant>`` (the table's primary key is the id alone, and every tenant may override a
built-in)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from knora.adapters.db.repos._mapping import apply, row_to, to_row
from knora.adapters.db.tables import AgentRow
from knora.domain.common import utcnow
from knora.domain.models import AgentConfig


def _row_id(agent: AgentConfig) -> str:
    return f"{agent.id}@{agent.tenant_id}" if agent.is_builtin else agent.id


def _record(row: AgentRow) -> AgentConfig:
    agent = row_to(AgentConfig, row)
    if row.is_builtin and "@" in row.id:
        agent = agent.model_copy(update={"id": row.id.rsplit("@", 1)[0]})
    return agent


class SqlAgentRepo:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def get(self, tenant_id: int, agent_id: str) -> AgentConfig | None:
        async with self._sessions() as s:
            for key in (agent_id, f"{agent_id}@{tenant_id}"):
                row = await s.get(AgentRow, key)
                if row is not None and row.tenant_id == tenant_id:
                    return _record(row)
        return None

    async def list(self, tenant_id: int) -> list[AgentConfig]:
        async with self._sessions() as s:
            rows = (await s.execute(select(AgentRow).where(AgentRow.tenant_id == tenant_id)
                                    .order_by(AgentRow.created_at))).scalars().all()
            return [_record(r) for r in rows]

    async def upsert(self, agent: AgentConfig) -> AgentConfig:
        agent = agent.model_copy(update={"updated_at": utcnow()})
        key = _row_id(agent)
        async with self._sessions.begin() as s:
            row = await s.get(AgentRow, key)
            if row is None:
                s.add(to_row(AgentRow, agent, id=key))
            else:
                apply(row, agent)
        return agent

    async def delete(self, tenant_id: int, agent_id: str) -> bool:
        async with self._sessions.begin() as s:
            for key in (agent_id, f"{agent_id}@{tenant_id}"):
                row = await s.get(AgentRow, key)
                if row is not None and row.tenant_id == tenant_id:
                    await s.delete(row)
                    return True
        return False
