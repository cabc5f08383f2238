"""The tenant's answering targets as model ids: listing and resolving."""

from __future__ import annotations

import pytest

from knora.root import Services
from knora.services.openai_api.models import AnswerTargets, ModelNotFound

pytestmark = pytest.mark.integration


async def test_lists_quick_answer_kbs_by_unique_name_and_agents(sqlite_container: Services) -> None:
    c, tenant = sqlite_container, sqlite_container.default_tenant_id
    one = await c.kb_service.create(tenant, {"name": "handbook / 2024 ✓"})
    twin_a = await c.kb_service.create(tenant, {"name": "twin"})
    twin_b = await c.kb_service.create(tenant, {"name": "twin"})
    custom = await c.agent_service.create(tenant, {"name": "Helper", "config": {
        "agent_mode": "smart-reasoning", "kb_selection_mode": "selected", "knowledge_bases": [one.id]}})
    targets = {t.id: t for t in await AnswerTargets(c.kb_service, c.agent_service, c.shares).list(tenant)}
    assert set(targets) == {"knora:quick-answer", "knora:kb/handbook / 2024 ✓", f"knora:kb/{twin_a.id}",
                            f"knora:kb/{twin_b.id}", "knora:agent/builtin-quick-answer",
                            "knora:agent/builtin-smart-reasoning", f"knora:agent/{custom.id}"}
    assert set(targets["knora:quick-answer"].knowledge_base_ids) == {one.id, twin_a.id, twin_b.id}
    assert targets[f"knora:agent/{custom.id}"].knowledge_base_ids == [one.id]
    assert targets[f"knora:agent/{custom.id}"].mode == "agent"
    assert targets["knora:kb/handbook / 2024 ✓"].knowledge_base_ids == [one.id]


async def test_resolves_ids_and_unique_names_and_refuses_the_rest(sqlite_container: Services) -> None:
    c, tenant = sqlite_container, sqlite_container.default_tenant_id
    kb = await c.kb_service.create(tenant, {"name": "docs"})
    await c.kb_service.create(tenant, {"name": "twin"})
    await c.kb_service.create(tenant, {"name": "twin"})
    targets = AnswerTargets(c.kb_service, c.agent_service, c.shares)
    assert (await targets.resolve(tenant, f"knora:kb/{kb.id}")).knowledge_base_ids == [kb.id]
    assert (await targets.resolve(tenant, "knora:kb/docs")).knowledge_base_ids == [kb.id]
    agent = await targets.resolve(tenant, "knora:agent/builtin-smart-reasoning")
    assert (agent.mode, agent.agent_id) == ("agent", "builtin-smart-reasoning")
    for unknown in ("knora:kb/twin", "knora:kb/nope", "knora:agent/nope", "gpt-4o", "knora:"):
        with pytest.raises(ModelNotFound):
            await targets.resolve(tenant, unknown)


async def test_another_tenants_kbs_and_agents_are_not_models(sqlite_container: Services) -> None:
    c = sqlite_container
    kb = await c.kb_service.create(c.default_tenant_id, {"name": "mine"})
    agent = await c.agent_service.create(c.default_tenant_id, {"name": "Mine"})
    other, _key = await c.tenants.create("other")
    targets = AnswerTargets(c.kb_service, c.agent_service, c.shares)
    for model_id in (f"knora:kb/{kb.id}", "knora:kb/mine", f"knora:agent/{agent.id}"):
        with pytest.raises(ModelNotFound):
            await targets.resolve(other.id, model_id)
    listed = {t.id for t in await targets.list(other.id)}
    assert listed == {"knora:quick-answer", "knora:agent/builtin-quick-answer",
                      "knora:agent/builtin-smart-reasoning"}
    assert (await targets.resolve(other.id, "knora:quick-answer")).knowledge_base_ids == []
