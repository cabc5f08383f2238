"""The agent tool port: what every built-in, MCP and skill tool implements (seed 000 "插拔怎么设计").

The engine sees tools only through the registry (``knora/services/agent/registry.py``); a tool never learns
which engine calls it, and the engine never learns a concrete tool type. ``ToolContext`` carries what a call
needs about the turn (tenant, knowledge scope, bus hooks) so tools stay stateless between turns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from knora.ports.blobs import BlobStore
from knora.ports.chat import ChatModels
from knora.ports.conversation_store import Conversations
from knora.ports.graph import GraphStore
from knora.ports.reranker import Rerankers
from knora.ports.search_store import SearchService
from knora.ports.store import Repositories
from knora.ports.websearch import TenantWebSearch, WebSearch
from knora.settings import Settings


class ToolResult(BaseModel):
    success: bool = True
    output: str = ""  # text for the model (before the model-facing rendering of spec §4.7)
    data: dict[str, Any] = Field(default_factory=dict)  # structured, for the UI; may carry ``display_type``
    error: str = ""

    @classmethod
    def fail(cls, error: str, **data: Any) -> ToolResult:
        return cls(success=False, error=error, data=dict(data))


Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


async def _no_emit(_type: str, _data: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    """Per-call context. ``state`` is shared by every call of one run (plans, thought history, seen
    chunks)."""

    tenant_id: int  # whose knowledge, models and services the tools use (a shared agent's own tenant)
    session_id: str = ""
    assistant_message_id: str = ""
    request_id: str = ""
    tool_call_id: str = ""
    query: str = ""
    knowledge_base_ids: list[str] = field(default_factory=list)
    knowledge_ids: list[str] = field(default_factory=list)
    tag_ids: list[str] = field(default_factory=list)
    web_search_enabled: bool = False
    web_search_max_results: int = 5
    rerank_model_id: str | None = None
    chat_model_id: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    emit: Emit = _no_emit  # emit(bus_event_type, payload) — for tools that talk to the user (approval)
    cancelled: asyncio.Event | None = None  # the turn's stop flag, when known
    caller_tenant_id: int | None = None  # the session's tenant when it is not ``tenant_id`` (a shared agent)
    session_user_id: str = ""  # the session's owner: the earlier conversations a tool may read are theirs

    @property
    def session_tenant_id(self) -> int:
        """The tenant of the session: its conversations and tool approvals are this tenant's."""
        return self.caller_tenant_id if self.caller_tenant_id is not None else self.tenant_id


@runtime_checkable
class Tool(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments object (an OpenAI function ``parameters`` value)."""
        ...

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class ToolSpec(BaseModel):
    """Optional, per-tool knobs the registry honours when a tool object carries them as attributes."""

    timeout_seconds: float | None = None  # default: the registry's (60 s, spec §6.4)
    output_limit_chars: int | None = None  # a larger per-tool budget than the registry's 24 000


def tool_timeout(tool: Tool) -> float | None:
    value = getattr(tool, "timeout_seconds", None)
    return float(value) if isinstance(value, int | float) and value > 0 else None


def tool_output_limit(tool: Tool) -> int | None:
    value = getattr(tool, "output_limit_chars", None)
    return int(value) if isinstance(value, int) and value > 0 else None


@dataclass
class ToolDeps:
    """What tool factories may use, injected by the composition root (adapters never import services).

    Each field is another area seen through its port; a missing one is ``None`` and its tools are not offered.
    """

    settings: Settings | None = None
    search_service: SearchService | None = None
    rerankers: Rerankers | None = None
    chat_models: ChatModels | None = None
    repos: Repositories | None = None
    web_search: WebSearch | None = None
    web_searches: TenantWebSearch | None = None  # a tenant's default provider (/web-search-providers)
    graph_store: GraphStore | None = None
    blobs: BlobStore | None = None  # for data tools reading the original CSV/XLSX
    conversations: Conversations | None = None


ToolFactory = Callable[[ToolDeps], "Tool | None"]


class ApprovalDecision(BaseModel):
    approved: bool
    reason: str = ""
    timed_out: bool = False
    modified_args: dict[str, Any] | None = None


@runtime_checkable
class ApprovalGate(Protocol):
    """Human approval of a dangerous tool call: emits tool_approval_required, waits for a decision or
    timeout."""

    async def request(self, ctx: ToolContext, payload: dict[str, Any]) -> ApprovalDecision: ...


@runtime_checkable
class ApprovalRelay(Protocol):
    """Carries approval decisions between server instances (the run may wait on another replica)."""

    async def publish(self, tenant_id: int, pending_id: str, decision: ApprovalDecision) -> None: ...

    async def start(self, on_decision: Callable[[int, str, ApprovalDecision], Awaitable[None]]) -> None: ...

    async def close(self) -> None: ...
