"""The turn contract: what the streaming service hands a runtime for one chat turn, and what it gets back.

The quick-answer pipeline and the smart-reasoning agent both implement ``TurnRunner``; they meet the stream
only through ``TurnContext.bus``, an ``EventBus`` (implemented by ``knora/services/streaming/bus.py``), and
never import the streaming service (see docs/architecture.md, "A chat turn").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from knora.domain.models import AgentConfig
from knora.domain.search import SearchResult
from knora.domain.stream import BusEvent
from knora.ports.chat import Usage


@runtime_checkable
class EventBus(Protocol):
    """A turn's event bus: runners emit what happens (answer and reasoning deltas, tool calls and results,
    references, stage timings, errors); the streaming handler turns it into the stream log."""

    async def emit(self, event_type: BusEvent, data: dict[str, Any] | None = None, *,
                   event_id: str = "") -> None: ...


class HistoryTurn(BaseModel):
    query: str
    answer: str  # public form (expanded <kb/>/<web/> tags); runners compact it through the registry
    references: list[dict[str, Any]] = Field(default_factory=list)
    created_at: str | None = None


class TurnRequest(BaseModel):
    model_config = {"frozen": True}

    tenant_id: int
    session_id: str
    request_id: str
    user_message_id: str
    assistant_message_id: str
    query: str
    knowledge_base_ids: list[str] = Field(default_factory=list)
    knowledge_ids: list[str] = Field(default_factory=list)
    tag_ids: list[str] = Field(default_factory=list)
    web_search_enabled: bool = False
    agent: AgentConfig | None = None
    summary_model_id: str | None = None
    citations_enabled: bool = True
    history: list[HistoryTurn] = Field(default_factory=list)
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
    images: list[str] = Field(default_factory=list)
    mcp_service_ids: list[str] = Field(default_factory=list)
    skill_names: list[str] = Field(default_factory=list)
    language: str = ""  # e.g. "zh-CN"; empty = follow the query
    session_user_id: str = ""  # who owns the session (``Viewer``): its conversation history is theirs

    @property
    def resource_tenant_id(self) -> int:
        """The tenant whose models, knowledge bases, MCP services and web search the turn uses: the agent's
        own — another tenant's when it shared the agent (it lends them with it) —, else the caller's. The
        session, its messages, tool approvals and the caller's conversation history stay ``tenant_id``'s."""
        return self.agent.tenant_id if self.agent is not None and self.agent.lent_to(self.tenant_id) \
            else self.tenant_id


class TurnOutcome(BaseModel):
    answer: str = ""  # as the model wrote it (with <ref id="cN"/> marks); the service expands it
    references: list[SearchResult] = Field(default_factory=list)
    agent_steps: list[dict[str, Any]] = Field(default_factory=list)
    is_fallback: bool = False
    rendered_content: str = ""
    model_id: str = ""
    debug: dict[str, Any] = Field(default_factory=dict)
    image_description: str = ""  # what the VLM saw in the user's images (kept as the first image's caption)


@runtime_checkable
class ReferenceRegistryPort(Protocol):
    """Per-turn handle tables (spec §4); implemented in knora/services/citations/registry.py."""

    citations_enabled: bool

    def register_search_results(self, results: list[SearchResult]) -> None:
        """documents dN, KBs bN, chunks cN in result order (spec §4.2)."""
        ...

    def chunk_handle(self, chunk_id: str) -> str | None: ...

    def document_handle(self, knowledge_id: str) -> str | None: ...

    def kb_handle(self, knowledge_base_id: str) -> str | None: ...

    def register_web(self, url: str, title: str = "") -> str: ...

    def resolve(self, handle: str) -> dict[str, Any] | None:
        """{'kind': 'chunk'|'document'|'kb'|'web', 'id'|'url': …, …} for a known handle (any case), else
        None."""
        ...

    def protocol_prompt(self) -> str:
        """Appended to the system prompt of every model call (spec §4.3)."""
        ...

    def expand_text(self, text: str) -> str:
        """Model text → public text: known <ref id="cN"/> → <kb …/>, <ref id="wN"/> → <web …/>, rest
        deleted."""
        ...

    def compact_public_citations(self, text: str) -> str:
        """History replay: public <kb chunk_id=…/>/<web url=…/> tags → <ref id="…"/> with this turn's
        handles."""
        ...

    def encode_text(self, text: str) -> str:
        """Durable ids/storage references in text shown to the model → handles (spec §4.6, §4.7)."""
        ...

    def decode_arguments(self, text: str) -> str:
        """Handles in tool-call arguments → durable ids."""
        ...


@dataclass
class TurnContext:
    bus: EventBus
    references: ReferenceRegistryPort
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    usage: Usage | None = None  # the answering model calls' reported token counts, summed (None: none)

    def add_usage(self, usage: Usage | None) -> None:
        """Counts one answering model call's reported usage (the answer of quick answer, each agent round)."""
        if usage is None:
            return
        total = self.usage or Usage()
        call_total = usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        self.usage = Usage(prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
                           completion_tokens=total.completion_tokens + usage.completion_tokens,
                           total_tokens=total.total_tokens + call_total)


@runtime_checkable
class TurnRunner(Protocol):
    async def run(self, req: TurnRequest, ctx: TurnContext) -> TurnOutcome: ...
