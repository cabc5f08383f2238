"""``AgentSettings``: the typed view of an agent's ``config`` (WeKnora's ``CustomAgentConfig``), with the one
set of defaults every reader uses.

The stored ``AgentConfig.config`` stays the dict the API round-trips (unknown fields kept, for WeKnora
clients), so its JSON shape does not change; readers call ``AgentSettings.of(config)`` and get typed
attributes instead of scattering ``cfg.get(key, default)`` with defaults that drifted apart. Parsing never
fails: a value of the wrong type, or a non-positive count or threshold, reads as the default (what the
quick-answer assembly always did with such values), so a stored oddity cannot break a chat turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from knora.domain.knowledge import AGENT_VECTOR_THRESHOLD, DEFAULT_KEYWORD_THRESHOLD

# Counts and thresholds that only make sense above zero: 0, negatives and non-numbers mean "the default".
_POSITIVE = ("history_turns", "embedding_top_k", "keyword_threshold", "vector_threshold", "rerank_top_k",
             "max_completion_tokens", "faq_direct_answer_threshold", "faq_score_boost",
             "web_search_max_results", "web_fetch_top_n", "max_iterations")
# Modes and strategies where an empty string means "the default".
_MODES = ("agent_mode", "kb_selection_mode", "fallback_strategy", "skills_selection_mode")
# Optional engine limits: a positive number overrides the engine's own default, anything else leaves it.
_OPTIONAL_POSITIVE = ("max_context_tokens", "llm_call_timeout")


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="allow")

    # Models (ids of ``/models`` rows or ``provider:model``; "" = the tenant's or the settings' default).
    model_id: str = ""
    rerank_model_id: str = ""
    vlm_model_id: str = ""
    query_understand_model_id: str = ""
    agent_mode: str = "quick-answer"  # quick-answer | smart-reasoning
    agent_type: str = ""

    # Generation.
    temperature: float = 0.7
    max_completion_tokens: int = 2048
    thinking: bool | None = False  # None: leave it to the model
    system_prompt: str = ""
    system_prompt_id: str = ""
    context_template: str = ""
    context_template_id: str = ""

    # Conversation.
    multi_turn_enabled: bool = True
    history_turns: int = 5
    citation_enabled: bool = True
    image_upload_enabled: bool = False

    # Retrieval (quick answer).
    kb_selection_mode: str = "selected"  # all | selected | none
    knowledge_bases: list[str] = []
    retrieve_kb_only_when_mentioned: bool = False
    embedding_top_k: int = 10
    keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD
    vector_threshold: float = AGENT_VECTOR_THRESHOLD
    rerank_top_k: int = 10
    rerank_threshold: float | None = 0.3
    faq_priority_enabled: bool = True
    faq_direct_answer_threshold: float = 0.9
    faq_score_boost: float = 1.2
    enable_rewrite: bool = True
    enable_query_expansion: bool = True
    rewrite_prompt_system: str = ""
    rewrite_prompt_user: str = ""
    intent_prompts: dict[str, Any] = {}
    data_analysis_enabled: bool = False
    fallback_strategy: str = "model"  # model | fixed
    fallback_response: str = ""
    fallback_prompt: str = ""

    # Web.
    web_search_enabled: bool = True
    web_search_max_results: int = 5
    web_fetch_enabled: bool = False
    web_fetch_top_n: int = 3

    # Smart reasoning (the ReAct engine).
    max_iterations: int = 10
    allowed_tools: list[str] = []
    mcp_selection_mode: str | None = None  # all | selected | none
    mcp_services: list[str] = []
    skills_selection_mode: str = "none"  # all | selected | none
    selected_skills: list[str] = []
    parallel_tool_calls: bool = False
    max_context_tokens: int | None = None
    llm_call_timeout: float | None = None
    text_protocol: bool | None = None  # None: follow the model's tool support
    retain_retrieval_history: bool = False

    @field_validator(*_POSITIVE, mode="before")
    @classmethod
    def _positive(cls, v: object, info: ValidationInfo) -> object:
        name = info.field_name or ""
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return int(v) if cls.model_fields[name].annotation is int else v
        return cls.model_fields[name].default

    @field_validator(*_OPTIONAL_POSITIVE, mode="before")
    @classmethod
    def _optional_positive(cls, v: object) -> object:
        return v if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None

    @field_validator("temperature", mode="before")
    @classmethod
    def _temperature(cls, v: object) -> object:
        return v if isinstance(v, int | float) and v >= 0 else cls.model_fields["temperature"].default

    @field_validator(*_MODES, mode="before")
    @classmethod
    def _mode(cls, v: object, info: ValidationInfo) -> object:
        return v if v else cls.model_fields[info.field_name or ""].default

    @classmethod
    def of(cls, config: Mapping[str, Any] | None) -> AgentSettings:
        """The typed view of a stored config; fields that do not parse read as their defaults."""
        data = dict(config or {})
        while True:
            try:
                return cls.model_validate(data)
            except ValidationError as exc:
                bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
                if not bad & data.keys():
                    return cls()
                for key in bad:
                    data.pop(str(key), None)

    def extra(self, key: str) -> object:
        """An unknown (WeKnora-only or future) field, as stored."""
        return (self.model_extra or {}).get(key)


def default(name: str) -> Any:
    """The one default of a known field."""
    return AgentSettings.model_fields[name].get_default(call_default_factory=True)


# What ``ensure_defaults`` fills in when missing or empty (WeKnora's ``EnsureDefaults``).
_STORED_WHEN_EMPTY = ("max_iterations", "web_search_max_results", "history_turns", "embedding_top_k",
                      "keyword_threshold", "vector_threshold", "rerank_top_k", "max_completion_tokens")


def ensure_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """``CustomAgent.EnsureDefaults``: a new agent's stored config with the main defaults written in where a
    field is missing or empty; every other field, known or not, is kept untouched."""
    c = dict(config)
    t = c.get("temperature")
    if not isinstance(t, int | float) or t < 0:
        c["temperature"] = default("temperature")
    for key in _STORED_WHEN_EMPTY:
        if not c.get(key):
            c[key] = default(key)
    for key in ("fallback_strategy", "agent_mode"):  # "" is Go's unset string: the default
        if not c.get(key):
            c[key] = default(key)
    for key in ("thinking", "citation_enabled"):
        if c.get(key) is None:
            c[key] = default(key)
    return c


# The fields of WeKnora's ``CustomAgentConfig`` that its clients always receive (no ``omitempty``), with what
# a field Knora does not have reads as: its Go zero value, so that Go decodes it and the web UI shows it.
_WIRE_ZERO: dict[str, Any] = {"supported_file_types": [], "audio_upload_enabled": False, "asr_model_id": "",
                              "image_storage_provider": "", "prompt_protocol_version": 0}
_WIRE_FIELDS = ("agent_mode", "model_id", "rerank_model_id", "temperature", "max_completion_tokens",
                "thinking", "citation_enabled", "max_iterations", "allowed_tools", "mcp_selection_mode",
                "mcp_services", "skills_selection_mode", "selected_skills", "kb_selection_mode",
                "knowledge_bases", "retrieve_kb_only_when_mentioned", "retain_retrieval_history",
                "image_upload_enabled", "vlm_model_id", "data_analysis_enabled", "faq_priority_enabled",
                "faq_direct_answer_threshold", "faq_score_boost", "web_search_enabled",
                "web_search_max_results", "web_fetch_enabled", "multi_turn_enabled", "history_turns",
                "embedding_top_k", "keyword_threshold", "vector_threshold", "rerank_top_k",
                "rerank_threshold",
                "enable_query_expansion", "enable_rewrite", "fallback_strategy", "fallback_response")
# Knora's "unset" (None) for a field whose Go type has no nil, as the value it acts as.
_UNSET_AS = {"mcp_selection_mode": "all", "rerank_threshold": 0.0}


def wire_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """An agent's config as WeKnora's clients read it: the stored dict (unknown fields kept), plus every field
    WeKnora always sends that the dict lacks, with the value the agent runs with (``AgentSettings``) or, for a
    field Knora does not have, its Go zero value. Nothing is stored: this is the answer's view only."""
    out = dict(config)
    settings = AgentSettings.of(config)
    for name in _WIRE_FIELDS:
        unset = out.get(name) is None or (name in _MODES and not out.get(name))
        if unset and not (name in ("thinking", "citation_enabled") and name in out):
            value = getattr(settings, name)
            out[name] = _UNSET_AS.get(name) if value is None and name in _UNSET_AS else value
    for name, zero in _WIRE_ZERO.items():
        out.setdefault(name, zero)
    return out
