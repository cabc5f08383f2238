"""The tenant's answering targets as OpenAI "models" (docs/openai-api.md): what ``GET /v1/models`` lists and
what a ``model`` of ``POST /v1/chat/completions`` names.

- ``knora:quick-answer`` — quick answer over every knowledge base of the tenant;
- ``knora:kb/<name>`` — quick answer over one knowledge base. Names are not unique in Knora and may hold any
  character, so a knowledge base is listed by its name only when no other knowledge base of the tenant has
  that name (and the name is not another one's id); otherwise by ``knora:kb/<id>``. ``knora:kb/<id>`` is
  always accepted, and an id wins over a name;
- ``knora:agent/<id>`` — an agent, built in, the tenant's own or one another tenant shares with it
  (docs/accounts.md): quick-answer agents run the pipeline with the agent's settings, smart-reasoning agents
  the ReAct agent, over the knowledge bases the agent selects.

Temporary knowledge bases are not listed (they are scratch space), but their ids are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from knora.domain.agent_settings import AgentSettings
from knora.domain.common import is_uuid
from knora.domain.errors import NotFound
from knora.domain.knowledge import KnowledgeBase
from knora.domain.models import BUILTIN_CREATED_AT, AgentConfig
from knora.services.agent.service import AgentService
from knora.services.kb.service import KnowledgeBaseService
from knora.services.tenants.shares import ShareService

PREFIX = "knora:"
QUICK_ANSWER = "knora:quick-answer"
KB_PREFIX = "knora:kb/"
AGENT_PREFIX = "knora:agent/"


class ModelNotFound(NotFound):
    """An unknown model id (the OpenAI API answers ``model_not_found``)."""

    def __init__(self, model_id: str) -> None:
        super().__init__(f"The model '{model_id}' does not exist or you do not have access to it. "
                         "GET /v1/models lists the models of this API key")
        self.model_id = model_id


@dataclass(frozen=True)
class AnswerTarget:
    """What a model id runs: the chat mode (``knowledge`` or ``agent``), the agent, the knowledge bases."""

    id: str
    name: str  # for a model picker (Open WebUI shows ``name`` when a model has one)
    created: int
    mode: str = "knowledge"
    agent_id: str = ""
    knowledge_base_ids: list[str] = field(default_factory=list)


def _ts(value: datetime) -> int:
    return int(value.timestamp())


def _kb_model_ids(kbs: list[KnowledgeBase]) -> dict[str, str]:
    """KB id → its listed model id: by name when the name is the tenant's only one and no KB's id."""
    names: dict[str, int] = {}
    for kb in kbs:
        names[kb.name] = names.get(kb.name, 0) + 1
    ids = {kb.id for kb in kbs}
    return {kb.id: KB_PREFIX + (kb.name if names[kb.name] == 1 and kb.name not in ids and kb.name.strip()
                                else kb.id) for kb in kbs}


def _agent_kbs(settings: AgentSettings, all_ids: list[str]) -> list[str]:
    """The knowledge bases an agent answers from, as its web-UI chat would send them."""
    if settings.retrieve_kb_only_when_mentioned or settings.kb_selection_mode == "none":
        return []
    if settings.kb_selection_mode == "all":
        return all_ids
    return [k for k in settings.knowledge_bases if k in all_ids]


class AnswerTargets:
    """Lists and resolves a tenant's targets from its knowledge bases and agents."""

    def __init__(self, kbs: KnowledgeBaseService, agents: AgentService, shares: ShareService) -> None:
        self.kbs = kbs
        self.agents = agents
        self.shares = shares  # agents other tenants share with this one

    async def _kbs(self, tenant_id: int) -> list[KnowledgeBase]:
        return await self.kbs.list(tenant_id)

    def _agent(self, agent: AgentConfig, kb_ids: list[str]) -> AnswerTarget:
        return AnswerTarget(id=AGENT_PREFIX + agent.id, name=f"Knora agent: {agent.name}",
                            created=_ts(agent.created_at), mode="agent", agent_id=agent.id,
                            knowledge_base_ids=_agent_kbs(agent.settings(), kb_ids))

    async def list(self, tenant_id: int) -> list[AnswerTarget]:
        kbs = await self._kbs(tenant_id)
        all_ids = [kb.id for kb in kbs]
        listed = [kb for kb in kbs if not kb.is_temporary]
        model_ids = _kb_model_ids(listed)
        out = [AnswerTarget(id=QUICK_ANSWER, name="Knora quick answer (all knowledge bases)",
                            created=_ts(BUILTIN_CREATED_AT), knowledge_base_ids=all_ids)]
        out += [AnswerTarget(id=model_ids[kb.id], name=f"Knora knowledge base: {kb.name}",
                             created=_ts(kb.created_at), knowledge_base_ids=[kb.id]) for kb in listed]
        out += [self._agent(a, all_ids) for a in await self.agents.list(tenant_id)]
        out += [self._agent(a, []) for _share, a in await self.shares.received_agents(tenant_id)]
        return out

    async def resolve(self, tenant_id: int, model_id: str) -> AnswerTarget:
        """The target ``model_id`` names; ``ModelNotFound`` when it names none of this tenant's."""
        if model_id == QUICK_ANSWER:
            kbs = await self._kbs(tenant_id)
            return AnswerTarget(id=QUICK_ANSWER, name="Knora quick answer (all knowledge bases)",
                                created=_ts(BUILTIN_CREATED_AT), knowledge_base_ids=[kb.id for kb in kbs])
        if model_id.startswith(KB_PREFIX):
            ref = model_id[len(KB_PREFIX):]
            found = []
            if is_uuid(ref):  # the id form: one read, not the tenant's whole list
                try:
                    found = [await self.kbs.get(tenant_id, ref)]
                except NotFound:
                    found = []
            if not found:
                found = [kb for kb in await self._kbs(tenant_id) if kb.name == ref]
            if len(found) == 1:
                kb = found[0]
                return AnswerTarget(id=model_id, name=f"Knora knowledge base: {kb.name}",
                                    created=_ts(kb.created_at), knowledge_base_ids=[kb.id])
        elif model_id.startswith(AGENT_PREFIX):
            agent = await self.shares.usable_agent(tenant_id, model_id[len(AGENT_PREFIX):])
            if agent is not None:  # a shared agent's knowledge bases are its owner's: the turn picks them
                lent = agent.lent_to(tenant_id)
                return self._agent(agent, [] if lent else [kb.id for kb in await self._kbs(tenant_id)])
        raise ModelNotFound(model_id)
