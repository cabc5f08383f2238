"""Agents CRUD and resolution (``c.agent_service``): built-ins merged with tenant overrides, custom agents.

Built-ins ship without a model (spec §6.12); WeKnora's web UI refuses to send until the selected agent's
``config.model_id`` names a KnowledgeQA model from ``GET /models`` (and, for smart reasoning, a Rerank model),
so an empty model id is shown — and used — as the tenant's default of that type: its ``is_default`` row, else
the built-in (``builtin-chat``, ``builtin-rerank``).
"""

from __future__ import annotations

from typing import Any

from knora.domain.agent_settings import AgentSettings
from knora.domain.common import new_id, utcnow
from knora.domain.errors import BadRequest, Forbidden, NotFound
from knora.domain.models import BUILTIN_CHAT_MODEL_ID, BUILTIN_RERANK_MODEL_ID, AgentConfig
from knora.domain.nulls import absent_nulls
from knora.ports.agent_store import AgentRepo
from knora.ports.store import ModelRepo
from knora.services.agent import config as agent_config
from knora.services.agent.builtins import AGENT_TYPE_PRESETS, BUILTINS, builtin
from knora.services.refs import CHAT_TYPES, RERANK_TYPES, VLM_TYPES, TenantRefs


class AgentService:
    def __init__(self, repo: AgentRepo, models: ModelRepo | None = None,
                 refs: TenantRefs | None = None) -> None:
        self.repo = repo
        self.models = models  # the tenant's model rows pick an agent's default models
        self.refs = refs  # checks the model, knowledge-base and MCP ids a config names (None: unchecked)

    async def _check_refs(self, tenant_id: int, cfg: dict[str, Any], changed: dict[str, Any],
                          current: dict[str, Any] | None = None) -> None:
        """Every id the request sets in ``config`` must be the tenant's own (or built in). Ids already in
        ``current`` are not checked again: the web UI sends the whole config back on every save, and a
        knowledge base deleted since must not make the agent unsavable (on use every id is resolved within
        the tenant anyway)."""
        if self.refs is None:
            return
        before = current or {}
        for field, types in (("model_id", CHAT_TYPES), ("query_understand_model_id", CHAT_TYPES),
                             ("rerank_model_id", RERANK_TYPES), ("vlm_model_id", VLM_TYPES)):
            if field in changed and changed[field] != before.get(field):
                cfg[field] = await self.refs.model(tenant_id, changed[field], field=f"config.{field}",
                                                   types=types)
        for field, check in (("knowledge_bases", self.refs.knowledge_bases),
                             ("mcp_services", self.refs.mcp_services)):
            if field in changed:
                ids = changed[field]
                if not isinstance(ids, list):
                    raise BadRequest(f"config.{field} must be a list of ids")
                prior = before.get(field)
                known = prior if isinstance(prior, list) else []
                await check(tenant_id, [i for i in ids if i not in known], field=f"config.{field}")

    async def _default_models(self, tenant_id: int, smart: bool) -> tuple[str, str]:
        """(chat, rerank) for an agent that names none: the tenant's ``is_default`` row of each type, else the
        built-in — ``builtin-chat``, and ``builtin-rerank`` for smart reasoning only (WeKnora's UI needs a
        Rerank model to start it; quick answer reranks only with a model someone chose: the built-in reranker
        is no default, docs/retrieval.md). A row not marked default is never picked."""
        chat, rerank = BUILTIN_CHAT_MODEL_ID, BUILTIN_RERANK_MODEL_ID if smart else ""
        if self.models is not None:
            for row in sorted(await self.models.list(tenant_id), key=lambda r: r.updated_at):
                if row.is_default and row.status == "active":
                    if row.type == "KnowledgeQA":
                        chat = row.id
                    elif row.type == "Rerank":
                        rerank = row.id
        return chat, rerank

    async def _present(self, agent: AgentConfig) -> AgentConfig:
        typed = agent.settings()
        if typed.model_id and typed.rerank_model_id:
            return agent
        chat, rerank = await self._default_models(agent.tenant_id, typed.agent_mode == "smart-reasoning")
        cfg = {**agent.config, "model_id": typed.model_id or chat,
               "rerank_model_id": typed.rerank_model_id or rerank}
        return agent.model_copy(update={"config": cfg})

    async def get(self, tenant_id: int, agent_id: str) -> AgentConfig | None:
        stored = await self.repo.get(tenant_id, agent_id)
        if stored is None:
            stored = builtin(agent_id, tenant_id)
        elif stored.is_builtin:  # an override: code defaults under the tenant's edits
            base = builtin(agent_id, tenant_id)
            if base is not None:
                stored = stored.model_copy(update={"config": {**base.config, **stored.config}})
        return await self._present(stored) if stored is not None else None

    async def list(self, tenant_id: int) -> list[AgentConfig]:
        out = []
        for agent_id in BUILTINS:
            agent = await self.get(tenant_id, agent_id)
            if agent is not None:
                out.append(agent)
        for a in await self.repo.list(tenant_id):
            if not a.is_builtin:
                out.append(await self._present(a))
        return out

    async def create(self, tenant_id: int, body: dict[str, Any]) -> AgentConfig:
        name = (_text(body, "name") or "").strip()
        if not name:
            raise BadRequest("name is required")
        cfg = _config(body)
        preset = AGENT_TYPE_PRESETS.get(AgentSettings.of(cfg).agent_type)
        if preset:
            cfg = {**preset, **cfg}
        agent_config.validate(cfg)
        await self._check_refs(tenant_id, cfg, cfg)
        agent = AgentConfig(id=new_id(), tenant_id=tenant_id, name=name,
                            description=_text(body, "description") or "", avatar=_text(body, "avatar") or "",
                            config=agent_config.ensure_defaults(cfg))
        return await self._present(await self.repo.upsert(agent))

    async def update(self, tenant_id: int, agent_id: str, body: dict[str, Any]) -> AgentConfig:
        current = await self.get(tenant_id, agent_id)
        if current is None:
            raise NotFound("agent not found")
        changed = _config(body)
        cfg = {**current.config, **changed}
        agent_config.validate(cfg)
        await self._check_refs(tenant_id, cfg, changed, current.config)
        description, avatar = _text(body, "description"), _text(body, "avatar")
        updated = current.model_copy(update={
            "name": _text(body, "name") or current.name,
            "description": current.description if description is None else description,
            "avatar": current.avatar if avatar is None else avatar, "config": cfg, "updated_at": utcnow()})
        return await self._present(await self.repo.upsert(updated))

    async def delete(self, tenant_id: int, agent_id: str) -> None:
        if agent_id in BUILTINS:
            raise Forbidden("built-in agents cannot be deleted")
        if not await self.repo.delete(tenant_id, agent_id):
            raise NotFound("agent not found")

    async def copy(self, tenant_id: int, agent_id: str) -> AgentConfig:
        source = await self.get(tenant_id, agent_id)
        if source is None:
            raise NotFound("agent not found")
        return await self.create(tenant_id, {"name": f"{source.name} (copy)",
                                             "description": source.description, "avatar": source.avatar,
                                             "config": dict(source.config)})


def _text(body: dict[str, Any], key: str) -> str | None:
    """A string field of a request body (None when absent or null); any other JSON type is a 400, not a
    value turned into its Python repr (a list in ``name`` was saved as "['a']")."""
    value = body.get(key)
    if value is None or isinstance(value, str):
        return value
    raise BadRequest(f"{key} must be a string")


def _config(body: dict[str, Any]) -> dict[str, Any]:
    """The request's ``config`` object ({} when absent); a list or scalar is a 400 (it was a 500). A ``null``
    list (Go's unset slice) is absent, as everywhere in a request (``knora.domain.nulls``)."""
    cfg = body.get("config")
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise BadRequest("config must be an object")
    return absent_nulls(AgentSettings, cfg)
