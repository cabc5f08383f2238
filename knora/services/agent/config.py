"""Agent configuration: validation (§6.3) and the engine's limits.

The stored ``AgentConfig.config`` is a free dict (the API round-trips unknown fields); its typed view with the
one set of defaults (§6.12) is ``domain.agent_settings.AgentSettings``; ``EngineConfig`` is what the ReAct
engine runs with, derived from it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from knora.domain.agent_settings import AgentSettings, ensure_defaults
from knora.domain.errors import ValidationFailed

__all__ = ["DEFAULT_ALLOWED_TOOLS", "MAX_ITERATIONS_CAP", "EngineConfig", "ensure_defaults", "validate"]

MAX_ITERATIONS_CAP = 100
DEFAULT_ALLOWED_TOOLS = ["thinking", "todo_write", "knowledge_search", "grep_chunks", "list_knowledge_chunks",
                         "query_knowledge_graph", "get_document_info", "search_conversations",
                         "database_query", "data_analysis", "data_schema"]


def validate(config: dict[str, Any]) -> None:
    """Raised at create/update time so a bad agent never reaches a chat turn."""
    iterations = config.get("max_iterations")
    if isinstance(iterations, int | float) and iterations > MAX_ITERATIONS_CAP:
        raise ValidationFailed(f"max iterations too high: {int(iterations)} (max {MAX_ITERATIONS_CAP})")
    mode = config.get("mcp_selection_mode")
    if mode not in (None, "", "all", "selected", "none"):
        raise ValidationFailed(f"invalid mcp_selection_mode: {mode}")
    tools = config.get("allowed_tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        raise ValidationFailed("allowed_tools must be a list of tool names")


class EngineConfig(BaseModel):
    max_iterations: int = 10
    temperature: float | None = 0.7
    max_completion_tokens: int | None = None
    thinking: bool | None = None
    parallel_tool_calls: bool = False
    max_context_tokens: int = 200_000
    llm_call_timeout: float = 120.0
    tool_timeout: float = 60.0
    max_tool_output_chars: int = 24000
    retry_delays: list[float] = Field(default_factory=lambda: [1.0, 2.0])
    text_protocol: bool | None = None  # None → follow ChatModel.supports_tools
    duplicate_rounds_limit: int = 2  # consecutive rounds of only repeated calls before the run is stopped
    system_prompt: str = ""
    retain_retrieval_history: bool = False

    @classmethod
    def from_agent(cls, agent: AgentSettings) -> EngineConfig:
        """Raises ``ValidationFailed`` for a stored config over the iteration cap (it predates validation)."""
        if agent.max_iterations > MAX_ITERATIONS_CAP:
            raise ValidationFailed(f"max iterations too high: {agent.max_iterations} "
                                   f"(max {MAX_ITERATIONS_CAP})")
        values: dict[str, Any] = {
            "max_iterations": agent.max_iterations, "temperature": agent.temperature,
            "thinking": bool(agent.thinking), "parallel_tool_calls": agent.parallel_tool_calls,
            "system_prompt": agent.system_prompt, "retain_retrieval_history": agent.retain_retrieval_history,
            "text_protocol": agent.text_protocol,
        }
        if agent.max_context_tokens is not None:
            values["max_context_tokens"] = agent.max_context_tokens
        if agent.llm_call_timeout is not None:
            values["llm_call_timeout"] = agent.llm_call_timeout
        return cls(**values)
