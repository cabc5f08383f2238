"""Agent area wiring: repositories, tool catalogue, MCP toolset, approvals, agents service, smart reasoning.

Sets ``c.agent_repo``, ``c.mcp_service_repo``, ``c.approvals``, ``c.mcp_toolset``, ``c.tool_registry_factory``
(``(names, tool_deps) -> ToolRegistry``), ``c.agent_service`` and ``c.smart_reasoning`` (TurnRunner). Other
areas' attributes are read with ``getattr(c, name, None)`` so the agent area degrades (fewer tools) rather
than failing when one of them is absent.
"""

from __future__ import annotations

import logging
from typing import Any

from knora.adapters.db.repos.agents import SqlAgentRepo
from knora.adapters.db.repos.mcp_services import SqlMCPServiceRepo
from knora.adapters.mcp.approval_relay import RedisApprovalRelay
from knora.adapters.mcp.toolset import MCPToolset
from knora.adapters.tools._skills import load_skills, skills_prompt
from knora.adapters.tools.registry import CATALOG
from knora.ports.tool import ToolDeps
from knora.services.agent.approval import ApprovalBroker
from knora.services.agent.assembly import build_registry
from knora.services.agent.registry import ToolRegistry
from knora.services.agent.runner import RunnerDeps, SmartReasoningRunner
from knora.services.agent.service import AgentService

log = logging.getLogger(__name__)


def _attr(c: Any, name: str) -> Any:
    try:
        return getattr(c, name)
    except AttributeError:
        return None


def tool_deps(c: Any) -> ToolDeps:
    return ToolDeps(settings=c.settings, search_service=_attr(c, "search_service"), rerankers=_attr(c, "rerankers"),
                    chat_models=_attr(c, "chat_models"), repos=_attr(c, "repos"), web_search=_attr(c, "web_search"),
                    graph_store=_attr(c, "graph_store"), blobs=_attr(c, "blobs"), sessions=c.sessions,
                    conversations=_attr(c, "session_service"))


async def wire(c: Any) -> None:
    s = c.settings
    c.agent_repo = SqlAgentRepo(c.sessions)
    c.mcp_service_repo = SqlMCPServiceRepo(c.sessions)
    relay = RedisApprovalRelay(s.redis_url, s.redis_prefix) if s.stream_log == "redis" else None
    c.approvals = ApprovalBroker(relay=relay)
    try:
        await c.approvals.start()
    except Exception as exc:  # noqa: BLE001 - approvals still work on the replica that runs the turn
        log.warning("approval relay unavailable (%s); approvals are resolved per instance only", exc)
        await c.approvals.close()
        c.approvals = ApprovalBroker()
    c.on_close(c.approvals.close)
    c.mcp_toolset = MCPToolset(c.mcp_service_repo, stdio_enabled=s.mcp_stdio_enabled, approval=c.approvals)
    repos = _attr(c, "repos")
    c.agent_service = AgentService(c.agent_repo, getattr(repos, "models", None) if repos is not None else None)

    def factory(names: list[str], deps: ToolDeps | None = None) -> ToolRegistry:
        return build_registry(names, deps or tool_deps(c), CATALOG)

    c.tool_registry_factory = factory
    c.smart_reasoning = SmartReasoningRunner(RunnerDeps(
        chat_models=_attr(c, "chat_models"), tool_deps=tool_deps(c), catalog=CATALOG,
        mcp_tools=c.mcp_toolset.tools,
        skills_prompt=(lambda allowed: skills_prompt(load_skills(s.skills_dir, allowed))) if s.skills_enabled else None))
