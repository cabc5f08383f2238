"""Knowledge bases and agents shared with other tenants (issue 14).

An admin of the owning tenant shares a knowledge base with another tenant to read (search and chat over it,
list and read its documents) or to edit (also add documents); the receiving tenant lists it under
``GET /shared-knowledge-bases``. An agent is shared to use: the receiving tenant lists it under
``GET /shared-agents`` and chats with it; the turn then runs on what the agent's own tenant lends with it —
its models, the knowledge bases the agent is bound to, its MCP services and web search — while the session,
its messages and the caller's own conversation history stay the receiving tenant's
(``TurnRequest.resource_tenant_id``, ``knora.services.streaming.intake.shared_agent_scope``).

Revoking a share removes access at once: no share is cached anywhere (``knora.services.retrieval.shared``,
``usable_agent``)."""

from __future__ import annotations

from knora.domain.access import AGENT_SHARE, KB_SHARE, Principal, Share, SharePermission
from knora.domain.errors import BadRequest, NotFound
from knora.domain.knowledge import KnowledgeBase
from knora.domain.models import AgentConfig
from knora.ports.share_store import ShareRepo
from knora.services.agent.service import AgentService
from knora.services.kb.service import KnowledgeBaseService
from knora.services.tenants.service import TenantService


def parse_permission(value: object) -> SharePermission:
    v = str(value or "read").strip().lower()
    v = {"viewer": "read", "editor": "edit", "write": "edit"}.get(v, v)
    if v not in SharePermission._value2member_map_:
        raise BadRequest("permission: read or edit")
    return SharePermission(v)


class ShareService:
    def __init__(self, repo: ShareRepo, kbs: KnowledgeBaseService, tenants: TenantService,
                 agents: AgentService) -> None:
        self._repo = repo
        self._kbs = kbs
        self._tenants = tenants
        self._agents = agents

    async def _check_receiver(self, by: Principal, tenant_id: int, what: str) -> None:
        if tenant_id == by.tenant_id:
            raise BadRequest(f"tenant_id: {what} is its own tenant's already")
        if await self._tenants.get(tenant_id) is None:
            raise NotFound("No such tenant to share with")

    async def share_kb(self, by: Principal, kb_id: str, tenant_id: int, permission: SharePermission) -> Share:
        kb = await self._kbs.get(by.tenant_id, kb_id)  # 404 unless the caller's tenant owns it
        await self._check_receiver(by, tenant_id, "a knowledge base")
        return await self._repo.upsert(KB_SHARE, kb.id, by.tenant_id, tenant_id, permission, by.actor)

    async def kb_shares(self, tenant_id: int, kb_id: str) -> list[Share]:
        kb = await self._kbs.get(tenant_id, kb_id)
        return await self._repo.of_resource(KB_SHARE, kb.id, tenant_id)

    async def revoke(self, tenant_id: int, kb_id: str, share_id: str) -> None:
        kb = await self._kbs.get(tenant_id, kb_id)
        await self._delete(KB_SHARE, kb.id, tenant_id, share_id)

    async def _delete(self, resource_type: str, resource_id: str, owner: int, share_id: str) -> None:
        """Only a share of this resource: a share id of another one named under this path is not found."""
        shares = await self._repo.of_resource(resource_type, resource_id, owner)
        if not any(x.id == share_id for x in shares) or not await self._repo.delete(share_id, owner):
            raise NotFound("No such share")

    async def received(self, tenant_id: int) -> list[tuple[Share, KnowledgeBase]]:
        """The knowledge bases shared with the tenant, with their shares."""
        out: list[tuple[Share, KnowledgeBase]] = []
        for share in await self._repo.received(tenant_id, KB_SHARE):
            try:
                out.append((share, await self._kbs.get(share.owner_tenant_id, share.resource_id)))
            except NotFound:
                continue  # deleted since (its share goes with the next cleanup)
        return out

    async def grant(self, tenant_id: int, kb_id: str) -> Share | None:
        """The share through which the tenant may use this knowledge base, or None."""
        return await self._repo.grant(KB_SHARE, kb_id, tenant_id)

    # --- agents ---------------------------------------------------------------------------------------------
    async def _own_custom_agent(self, tenant_id: int, agent_id: str) -> AgentConfig:
        agent = await self._agents.get(tenant_id, agent_id)
        if agent is None or agent.tenant_id != tenant_id:
            raise NotFound("agent not found")
        if agent.is_builtin:
            raise BadRequest("A built-in agent is every tenant's already: copy it to share your own version")
        return agent

    async def share_agent(self, by: Principal, agent_id: str, tenant_id: int,
                          permission: SharePermission) -> Share:
        """The receiving tenant may chat with the agent, over what the agent is bound to (read only: an agent
        is edited in its own tenant)."""
        agent = await self._own_custom_agent(by.tenant_id, agent_id)
        if permission is not SharePermission.READ:
            raise BadRequest("permission: an agent is shared to use (read); it is edited in its own tenant")
        await self._check_receiver(by, tenant_id, "an agent")
        return await self._repo.upsert(AGENT_SHARE, agent.id, by.tenant_id, tenant_id, permission, by.actor)

    async def agent_shares(self, tenant_id: int, agent_id: str) -> list[Share]:
        agent = await self._own_custom_agent(tenant_id, agent_id)
        return await self._repo.of_resource(AGENT_SHARE, agent.id, tenant_id)

    async def revoke_agent(self, tenant_id: int, agent_id: str, share_id: str) -> None:
        agent = await self._own_custom_agent(tenant_id, agent_id)
        await self._delete(AGENT_SHARE, agent.id, tenant_id, share_id)

    async def received_agents(self, tenant_id: int) -> list[tuple[Share, AgentConfig]]:
        """The agents shared with the tenant, with their shares (an agent deleted since is left out)."""
        out: list[tuple[Share, AgentConfig]] = []
        for share in await self._repo.received(tenant_id, AGENT_SHARE):
            agent = await self._agents.get(share.owner_tenant_id, share.resource_id)
            if agent is not None and not agent.is_builtin:
                out.append((share, agent))
        return out

    async def usable_agent(self, tenant_id: int, agent_id: str) -> AgentConfig | None:
        """The agent a turn of ``tenant_id`` runs with: its own (or a built-in), else one another tenant
        shares with it — then the answer's ``tenant_id`` is the owner's. Read from the database on every
        turn, so a revoked share stops the next turn."""
        own = await self._agents.get(tenant_id, agent_id)
        if own is not None:
            return own
        share = await self._repo.grant(AGENT_SHARE, agent_id, tenant_id)
        if share is None:
            return None
        agent = await self._agents.get(share.owner_tenant_id, agent_id)
        if agent is None or agent.is_builtin:
            return None
        settings = agent.settings()
        if settings.kb_selection_mode == "all":  # what "all" lends: the owner's own knowledge bases, now
            owned = [kb.id for kb in await self._kbs.list(agent.tenant_id)]
            agent = agent.model_copy(update={"config": {**agent.config, "kb_selection_mode": "selected",
                                                        "knowledge_bases": owned}})
        return agent
