"""Agent configuration: WeKnora's ``CustomAgent`` config fields, defaults (§6.12) and validation (§6.3).

The stored ``AgentConfig.config`` is a free dict (the API round-trips unknown fields); ``EngineConfig`` is the
typed view the engine runs with.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from knora.domain.errors import ValidationFailed

MAX_ITERATIONS_CAP = 100
DEFAULT_ALLOWED_TOOLS = ["thinking", "todo_write", "knowledge_search", "grep_chunks", "list_knowledge_chunks",
                         "query_knowledge_graph", "get_document_info", "search_conversations", "database_query",
                         "data_analysis", "data_schema"]


def ensure_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """``CustomAgent.EnsureDefaults`` for the fields Knora uses; unknown fields are kept untouched."""
    c = dict(config)
    if not isinstance(c.get("temperature"), int | float) or c["temperature"] < 0:
        c["temperature"] = 0.7
    defaults = {"max_iterations": 10, "web_search_max_results": 5, "history_turns": 5, "embedding_top_k": 10,
                "keyword_threshold": 0.3, "vector_threshold": 0.5, "rerank_top_k": 5, "max_completion_tokens": 2048}
    for key, value in defaults.items():
        if not c.get(key):
            c[key] = value
    c.setdefault("fallback_strategy", "model")
    if c.get("thinking") is None:
        c["thinking"] = False
    if c.get("citation_enabled") is None:
        c["citation_enabled"] = True
    c.setdefault("agent_mode", "quick-answer")
    return c


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
    duplicate_rounds_limit: int = 2  # consecutive rounds made only of repeated calls before the run is stopped
    system_prompt: str = ""
    retain_retrieval_history: bool = False

    @classmethod
    def from_agent(cls, config: dict[str, Any]) -> EngineConfig:
        c = ensure_defaults(config)
        iterations = int(c.get("max_iterations") or 0)
        if iterations > MAX_ITERATIONS_CAP:
            raise ValidationFailed(f"max iterations too high: {iterations} (max {MAX_ITERATIONS_CAP})")
        values: dict[str, Any] = {
            "max_iterations": iterations if iterations > 0 else 5,
            "temperature": float(c["temperature"]),
            "thinking": bool(c.get("thinking")),
            "parallel_tool_calls": bool(c.get("parallel_tool_calls", False)),
            "system_prompt": str(c.get("system_prompt") or ""),
            "retain_retrieval_history": bool(c.get("retain_retrieval_history", False)),
        }
        if int(c.get("max_context_tokens") or 0) > 0:
            values["max_context_tokens"] = int(c["max_context_tokens"])
        if float(c.get("llm_call_timeout") or 0) > 0:
            values["llm_call_timeout"] = float(c["llm_call_timeout"])
        if c.get("text_protocol") is not None:
            values["text_protocol"] = bool(c["text_protocol"])
        return cls(**values)
