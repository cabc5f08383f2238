"""``SmartReasoningRunner``: the TurnRunner of smart reasoning — resolve config and model, assemble tools, run.

Everything concrete (tool catalogue, MCP toolset, model registry) is injected by ``wiring.py``, so this module
depends on ports and services only.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from knora.domain.errors import AppError
from knora.domain.stream import BusEvent
from knora.domain.think import drop_closed_think
from knora.ports.chat import ChatMessage, ToolCall
from knora.ports.tool import Tool, ToolContext, ToolDeps
from knora.services.agent import prompts
from knora.services.agent.assembly import Capabilities, Catalog, build_registry, select_tools
from knora.services.agent.config import EngineConfig, ensure_defaults
from knora.services.agent.engine import AgentEngine
from knora.services.agent.service import BUILTIN_CHAT_MODEL_ID
from knora.services.streaming.turn import TurnContext, TurnOutcome, TurnRequest

log = logging.getLogger(__name__)
MCPTools = Callable[[int, str | None, list[str]], Awaitable[list[Tool]]]
SkillsPrompt = Callable[[list[str] | None], str]


def _clean(name: str) -> str:
    return re.sub(r"[\r\n<>\"]", "", name)


@dataclass
class RunnerDeps:
    chat_models: Any  # async get(model_id | None, tenant_id=…) -> ChatModel
    tool_deps: ToolDeps
    catalog: Catalog
    mcp_tools: MCPTools | None = None
    skills_prompt: SkillsPrompt | None = None
    engine_overrides: dict[str, Any] | None = None  # tests/benchmarks: e.g. retry_delays


class SmartReasoningRunner:
    def __init__(self, deps: RunnerDeps) -> None:
        self.d = deps

    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome:
        started = time.perf_counter()
        agent_cfg = ensure_defaults(req.agent.config if req.agent else {})
        try:
            cfg = EngineConfig.from_agent(agent_cfg)
        except AppError as exc:
            await ctx.bus.emit(BusEvent.ERROR, {"error": exc.message, "stage": "agent_execution"})
            return TurnOutcome(debug={"error": exc.message})
        if self.d.engine_overrides:
            cfg = cfg.model_copy(update=self.d.engine_overrides)
        model_id = req.summary_model_id or agent_cfg.get("model_id") or None
        if model_id == BUILTIN_CHAT_MODEL_ID:  # "the settings' model", as GET /models lists it
            model_id = None
        try:
            model = await self.d.chat_models.get(model_id, tenant_id=req.tenant_id)
        except Exception as exc:  # noqa: BLE001 - a clear error event, never a hang
            await ctx.bus.emit(BusEvent.ERROR, {"error": f"chat model unavailable: {exc}", "stage": "agent_execution"})
            return TurnOutcome(debug={"error": str(exc)})
        web = bool(req.web_search_enabled and agent_cfg.get("web_search_enabled", True)
                   and self.d.tool_deps.web_search is not None)
        skills_mode = str(agent_cfg.get("skills_selection_mode") or "none")
        allowed_skills = None if skills_mode == "all" else list(agent_cfg.get("selected_skills") or [])
        skills_on = skills_mode in ("all", "selected") and (skills_mode == "all" or bool(allowed_skills))
        skills_on = skills_on and bool(getattr(self.d.tool_deps.settings, "skills_enabled", False))
        pinned_skills: list[str] = []
        if skills_on and req.skill_names:  # per-request @skill narrowing (spec §6.2)
            requested = list(dict.fromkeys(req.skill_names))
            allowed_skills = requested if allowed_skills is None else [s for s in allowed_skills if s in requested]
            skills_on = bool(allowed_skills)
            pinned_skills = list(allowed_skills)
        caps = Capabilities(knowledge=bool(req.knowledge_base_ids or req.knowledge_ids), web=web, skills=skills_on)
        names = select_tools(list(agent_cfg.get("allowed_tools") or []), caps, self.d.catalog)
        registry = build_registry(names, self.d.tool_deps, self.d.catalog, max_output_chars=cfg.max_tool_output_chars,
                                  tool_timeout=cfg.tool_timeout)
        must_use: list[str] = []
        if self.d.mcp_tools is not None:
            mode = agent_cfg.get("mcp_selection_mode")
            selected = list(agent_cfg.get("mcp_services") or [])
            if req.mcp_service_ids and mode != "none":
                selected = [s for s in req.mcp_service_ids if mode != "selected" or s in selected]
                mode = "selected" if selected else mode
            for tool in await self.d.mcp_tools(req.tenant_id, mode, selected):
                registry.register(tool)
            if req.mcp_service_ids and selected:
                must_use.append("Must use the MCP tools (names start with mcp_) to answer the question below.")
        must_use += [f'Must call read_skill(skill_name="{_clean(s)}") for @Skill "{_clean(s)}" before answering.'
                     for s in pinned_skills]
        extra = self.d.skills_prompt(allowed_skills) if (skills_on and self.d.skills_prompt) else ""
        system = prompts.system_prompt(custom=cfg.system_prompt, has_knowledge=caps.knowledge,
                                       kb_names=await self._kb_names(req),
                                       web_enabled=web, language=req.language,
                                       protocol=ctx.references.protocol_prompt() if req.citations_enabled else "",
                                       extra=extra)

        async def emit(event_type: str, data: dict[str, Any]) -> None:
            await ctx.bus.emit(BusEvent(event_type), data,
                               event_id=str(data.get("event_id") or data.get("pending_id") or ""))

        tool_ctx = ToolContext(
            tenant_id=req.tenant_id, session_id=req.session_id, assistant_message_id=req.assistant_message_id,
            request_id=req.request_id, query=req.query, knowledge_base_ids=list(req.knowledge_base_ids),
            knowledge_ids=list(req.knowledge_ids), tag_ids=list(req.tag_ids), web_search_enabled=web,
            web_search_max_results=int(agent_cfg.get("web_search_max_results") or 5),
            rerank_model_id=agent_cfg.get("rerank_model_id") or None, chat_model_id=model_id,
            state={"allowed_skills": allowed_skills}, emit=emit, cancelled=ctx.cancelled)
        engine = AgentEngine(model, registry, cfg, bus=ctx.bus, references=ctx.references, tool_context=tool_ctx,
                             cancelled=ctx.cancelled)
        history = self._history(req, ctx, int(agent_cfg.get("history_turns") or 5),
                                bool(agent_cfg.get("multi_turn_enabled", True)))
        seeds = [ToolCall(id=f"seed_{i}", name=name, arguments=json.dumps(entry.seed(req.query), ensure_ascii=False))
                 for i, (name, entry) in enumerate(self.d.catalog.items())
                 if entry.seed is not None and name in registry]
        result = await engine.run(system, history, prompts.user_turn(req.query, must_use=must_use), req.query,
                                  seed_calls=seeds)
        ctx.timings["agent_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return TurnOutcome(answer=result.answer, references=result.references, agent_steps=result.steps,
                           is_fallback=result.is_fallback, model_id=getattr(model, "model_id", ""),
                           debug={"rounds": result.rounds, "stop_reason": result.stop_reason,
                                  "tools": registry.names(), **({"error": result.error} if result.error else {})})

    async def _kb_names(self, req: TurnRequest) -> list[str]:
        repos = self.d.tool_deps.repos
        names: list[str] = []
        for kb_id in req.knowledge_base_ids[:20] if repos is not None else []:
            try:
                kb = await repos.kbs.get(req.tenant_id, kb_id)
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
                out.append(ChatMessage(role="assistant", content=ctx.references.compact_public_citations(answer)))
        return out
