"""The agent area's repositories on both metadata stores (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from knora.adapters.db.engine import make_engine, make_sessionmaker, migrate
from knora.adapters.db.repos.agents import SqlAgentRepo
from knora.adapters.db.repos.mcp_services import SqlMCPServiceRepo
from knora.domain.mcp import MCPService
from knora.domain.models import AgentConfig
from knora.services.agent.service import AgentService

pytestmark = pytest.mark.integration


@pytest.fixture
async def sessions(db_url: str) -> AsyncIterator[Any]:
    engine = make_engine(db_url)
    await migrate(engine)
    try:
        yield make_sessionmaker(engine)
    finally:
        await engine.dispose()


async def test_agents_and_builtin_overrides_per_tenant(sessions: Any) -> None:
    svc = AgentService(SqlAgentRepo(sessions))
    await svc.update(1, "builtin-smart-reasoning", {"config": {"max_iterations": 9}})
    assert (await svc.get(1, "builtin-smart-reasoning")).config["max_iterations"] == 9  # type: ignore[union-attr]
    assert (await svc.get(2, "builtin-smart-reasoning")).config["max_iterations"] == 50  # type: ignore[union-attr]
    custom = await svc.create(1, {"name": "Mine", "config": {"agent_mode": "smart-reasoning"}})
    assert [a.id for a in await svc.list(1)][-1] == custom.id
    assert await svc.get(2, custom.id) is None
    await svc.delete(1, custom.id)
    assert await svc.get(1, custom.id) is None
    repo = SqlAgentRepo(sessions)
    assert await repo.delete(2, "builtin-smart-reasoning") is False


async def test_mcp_services_are_tenant_scoped(sessions: Any) -> None:
    repo = SqlMCPServiceRepo(sessions)
    s = await repo.create(MCPService(tenant_id=1, name="A", url="http://x/mcp", tool_approvals={"t": True}))
    assert (await repo.get(1, s.id)).tool_approvals == {"t": True}  # type: ignore[union-attr]
    assert await repo.get(2, s.id) is None
    assert await repo.list(2) == []
    await repo.update(s.model_copy(update={"enabled": False}))
    assert [x.enabled for x in await repo.list(1)] == [False]
    with pytest.raises(LookupError):
        await repo.update(s.model_copy(update={"tenant_id": 2}))
    assert await repo.delete(2, s.id) is False
    assert await repo.delete(1, s.id) is True


def test_agent_record_roundtrip_keeps_unknown_config_fields() -> None:
    a = AgentConfig(name="x", config={"future_field": {"a": 1}})
    assert AgentConfig.model_validate(a.model_dump()).config == {"future_field": {"a": 1}}
