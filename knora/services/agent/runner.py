"""``SmartReasoningRunner``: the TurnRunner of smart reasoning — resolve config and model, assemble tools,
run. Each step is a small function over the agent's typed settings (``AgentSettings``).

Everything concrete (tool catalogue, MCP toolset, model registry) is injected by the composition root
(``knora/root.py``), so this module depends on ports and services only.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from knora.domain.agent_settings import AgentSettings
from knora.domain.errors import AppError
from knora.domain.stream import BusEvent
from knora.domain.think import drop_closed_think
from knora.ports.chat import ChatMessage, ChatModels, ToolCall
from knora.ports.tool import Tool, ToolContext, ToolDeps
from knora.ports.turn import TurnContext, TurnOutcome, TurnRequest
from knora.ports.websearch import resolve_web_search
from knora.services.agent import prompts
from knora.services.agent.assembly import Capabilities, Catalog, build_registry, select_tools
from knora.services.agent.config import EngineConfig
from knora.services.agent.engine import AgentEngine
from knora.services.agent.images import describe_for_agent
from knora.services.agent.registry import ToolRegistry
from knora.services.agent.think import event_id
from knora.services.agent.usage import CountedModel

log = logging.getLogger(__name__)
MCPTools = Callable[[int, str | None, list[str]], Awaitable[list[Tool]]]
SkillsPrompt = Callable[[list[str] | None], str]


def _clean(name: str) -> str:
    return re.sub(r"[\r\n<>\"]", "", name)


@dataclass
class RunnerDeps:
    chat_models: ChatModels
    tool_deps: ToolDeps
    catalog: Catalog
    mcp_tools: MCPTools | None = None
    skills_prompt: SkillsPrompt | None = None
    engine_overrides: dict[str, Any] | None = None  # tests/benchmarks: e.g. retry_delays


@dataclass(frozen=True)
class SkillScope:
    """Which skills a turn may use: ``allowed`` None means all; ``pinned`` were named by the user (@skill)."""

    enabled: bool
    allowed: list[str] | None
    pinned: list[str]


def skill_scope(agent: AgentSettings, requested: list[str], skills_enabled: bool) -> SkillScope:
    """The agent's skill selection, narrowed by the request's @skill names (spec §6.2)."""
    mode = agent.skills_selection_mode
    allowed = None if mode == "all" else list(agent.selected_skills)
    enabled = skills_enabled and (mode == "all" or (mode == "selected" and bool(allowed)))
    if not (enabled and requested):
        return SkillScope(enabled, allowed, [])
    wanted = list(dict.fromkeys(requested))
    narrowed = wanted if allowed is None else [s for s in allowed if s in wanted]
    return SkillScope(bool(narrowed), narrowed, list(narrowed))


def mcp_selection(agent: AgentSettings, requested: list[str]) -> tuple[str | None, list[str]]:
    """(mode, service ids): the agent's MCP choice, narrowed to the services the request names."""
    mode, selected = agent.mcp_selection_mode, list(agent.mcp_services)
    if requested and mode != "none":
        selected = [s for s in requested if mode != "selected" or s in selected]
        mode = "selected" if selected else mode
    return mode, selected


def chat_model_id(req: TurnRequest, agent: AgentSettings) -> str | None:
    """The model the turn names (``builtin-chat`` included: the registry resolves it to the settings' model,
    never to a stored row); None lets the tenant's default answer."""
    return req.summary_model_id or agent.model_id or None


def must_use_skills(pinned: list[str]) -> list[str]:
    return [f'Must call read_skill(skill_name="{_clean(s)}") for @Skill "{_clean(s)}" before answering.'
            for s in pinned]


class SmartReasoningRunner:
    def __init__(self, deps: RunnerDeps) -> None:
        self.d = deps

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        started = time.perf_counter()
        agent = req.agent.settings() if req.agent else AgentSettings()
        try:
            cfg = self._engine_config(agent)
        except AppError as exc:
            return await self._fail(ctx, exc.message, exc.message)
        model_id = chat_model_id(req, agent)
        try:
            found = await self.d.chat_models.get(model_id, tenant_id=req.resource_tenant_id)
            model = CountedModel(found, ctx)
        except Exception as exc:  # noqa: BLE001 - a clear error event, never a hang
            return await self._fail(ctx, f"chat model unavailable: {exc}", str(exc))
        if not getattr(model, "generative", True):
            return await self._needs_chat_model(req, ctx, model.model_id)
        web = bool(req.web_search_enabled and agent.web_search_enabled
                   and await resolve_web_search(req.resource_tenant_id, self.d.tool_deps.web_search,
                                                self.d.tool_deps.web_searches) is not None)
        skills = skill_scope(agent, list(req.skill_names),
                             bool(getattr(self.d.tool_deps.settings, "skills_enabled", False)))
        caps = Capabilities(knowledge=bool(req.knowledge_base_ids or req.knowledge_ids), web=web,
                            skills=skills.enabled)
        registry = build_registry(select_tools(agent.allowed_tools, caps, self.d.catalog), self.d.tool_deps,
                                  self.d.catalog, max_output_chars=cfg.max_tool_output_chars,
                                  tool_timeout=cfg.tool_timeout)
        must_use = await self._add_mcp_tools(req, agent, registry) + must_use_skills(skills.pinned)
        system = await self._system_prompt(req, ctx, cfg, caps, skills)
        tool_ctx = self._tool_context(req, ctx, agent, web, model_id, skills)
        engine = AgentEngine(model, registry, cfg, bus=ctx.bus, references=ctx.references,
                             tool_context=tool_ctx, cancelled=ctx.cancelled)
        history = self._history(req, ctx, agent.history_turns, agent.multi_turn_enabled)
        query = req.query + await describe_for_agent(self.d.chat_models, req, ctx, agent.vlm_model_id)
        result = await engine.run(system, history, prompts.user_turn(query, must_use=must_use), req.query,
                                  seed_calls=self._seeds(req, registry))
        ctx.timings["agent_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return TurnOutcome(answer=result.answer, references=result.references, agent_steps=result.steps,
                           is_fallback=result.is_fallback, model_id=model.model_id,
                           debug={"rounds": result.rounds, "stop_reason": result.stop_reason,
                                  "tools": registry.names(),
                                  **({"error": result.error} if result.error else {})})

    def _engine_config(self, agent: AgentSettings) -> EngineConfig:
        cfg = EngineConfig.from_agent(agent)
        return cfg.model_copy(update=self.d.engine_overrides) if self.d.engine_overrides else cfg

    @staticmethod
    async def _fail(ctx: TurnContext, message: str, debug: str) -> TurnOutcome:
        await ctx.bus.emit(BusEvent.ERROR, {"error": message, "stage": "agent_execution"})
        return TurnOutcome(debug={"error": debug})

    @staticmethod
    async def _needs_chat_model(req: TurnRequest, ctx: TurnContext, model_id: str) -> TurnOutcome:
        """No generative model (the extractive answerer cannot plan or call tools): the turn's answer says so
        and offers quick answer, as an answer event like the engine's, instead of quoting sentences as if the
        agent had reasoned."""
        text = prompts.needs_chat_model(req.language, req.query)
        eid = event_id("answer")
        for content, done in ((text, False), ("", True)):
            # not is_fallback: the UI labels those "no matching content", which is not what happened
            await ctx.bus.emit(BusEvent.FINAL_ANSWER, {"content": content, "done": done, "event_id": eid,
                                                       "is_fallback": False}, event_id=eid)
        return TurnOutcome(answer=text, model_id=model_id,
                           debug={"rounds": 0, "stop_reason": "needs_chat_model"})

    async def _add_mcp_tools(self, req: TurnRequest, agent: AgentSettings,
                             registry: ToolRegistry) -> list[str]:
        """Registers the turn's MCP tools; the instruction to use them when the user picked services."""
        if self.d.mcp_tools is None:
            return []
        mode, selected = mcp_selection(agent, list(req.mcp_service_ids))
        for tool in await self.d.mcp_tools(req.resource_tenant_id, mode, selected):
            registry.register(tool)
        if req.mcp_service_ids and selected:
            return ["Must use the MCP tools (names start with mcp_) to answer the question below."]
        return []

    async def _system_prompt(self, req: TurnRequest, ctx: TurnContext, cfg: EngineConfig, caps: Capabilities,
                             skills: SkillScope) -> str:
        extra = self.d.skills_prompt(skills.allowed) if (skills.enabled and self.d.skills_prompt) else ""
        protocol = ctx.references.protocol_prompt() if req.citations_enabled else ""
        return prompts.system_prompt(custom=cfg.system_prompt, has_knowledge=caps.knowledge,
                                     kb_names=await self._kb_names(req), web_enabled=caps.web,
                                     language=req.language, protocol=protocol, extra=extra)

    @staticmethod
    def _tool_context(req: TurnRequest, ctx: TurnContext, agent: AgentSettings, web: bool,
                      model_id: str | None, skills: SkillScope) -> ToolContext:
        async def emit(event_type: str, data: dict[str, Any]) -> None:
            await ctx.bus.emit(BusEvent(event_type), data,
                               event_id=str(data.get("event_id") or data.get("pending_id") or ""))

        return ToolContext(
            tenant_id=req.resource_tenant_id, caller_tenant_id=req.tenant_id, session_id=req.session_id,
            session_user_id=req.session_user_id,
            assistant_message_id=req.assistant_message_id,
            request_id=req.request_id, query=req.query, knowledge_base_ids=list(req.knowledge_base_ids),
            knowledge_ids=list(req.knowledge_ids), tag_ids=list(req.tag_ids), web_search_enabled=web,
            web_search_max_results=agent.web_search_max_results,
            rerank_model_id=agent.rerank_model_id or None, chat_model_id=model_id,
            state={"allowed_skills": skills.allowed}, emit=emit, cancelled=ctx.cancelled)

    def _seeds(self, req: TurnRequest, registry: ToolRegistry) -> list[ToolCall]:
        """The catalogue's seed calls (run before the first round) for the tools this turn has."""
        return [ToolCall(id=f"seed_{i}", name=name,
                         arguments=json.dumps(entry.seed(req.query), ensure_ascii=False))
                for i, (name, entry) in enumerate(self.d.catalog.items())
                if entry.seed is not None and name in registry]

    async def _kb_names(self, req: TurnRequest) -> list[str]:
        repos = self.d.tool_deps.repos
        names: list[str] = []
        if repos is None:
            return names
        for kb_id in req.knowledge_base_ids[:20]:
            try:
                kb = await repos.kbs.get(req.resource_tenant_id, kb_id)
            except Exception:  # noqa: BLE001 - names only decorate the prompt
                kb = None
            if kb is not None:
                names.append(kb.name)
        return names

    @staticmethod
    def _history(req: TurnRequest, ctx: TurnContext, turns: int, enabled: bool) -> list[ChatMessage]:
        if not enabled:
            return []
        out: list[ChatMessage] = []
        for h in req.history[-turns:] if turns > 0 else []:
            answer = drop_closed_think(h.answer).strip()
            out.append(ChatMessage(role="user", content=h.query))
            if answer:
                compact = ctx.references.compact_public_citations(answer)
                out.append(ChatMessage(role="assistant", content=compact))
        return out
