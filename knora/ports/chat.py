"""The chat model port: the wire protocol (messages, tool calls, deltas) apart from who serves it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: str = "{}"  # raw JSON text as the model produced it (may be malformed)


class ChatMessage(BaseModel):
    role: str  # system | user | assistant | tool
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str = ""
    images: list[str] = Field(default_factory=list)  # image URLs (``data:`` URLs) shown with a user message


class ChatOptions(BaseModel):
    temperature: float | None = None
    max_tokens: int | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)  # OpenAI function definitions
    tool_choice: str | None = None
    thinking: bool | None = None
    response_format: dict[str, Any] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatChunk(BaseModel):
    """One streamed delta. The last chunk carries ``finish_reason`` and the fully assembled ``tool_calls``."""

    content: str = ""
    reasoning_content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None


class ChatResponse(BaseModel):
    content: str = ""
    reasoning_content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None


T = TypeVar("T")


async def close_stream(stream: AsyncIterator[T]) -> None:
    """Close a model stream a caller leaves early (stop, failure, deadline) now, not at garbage collection:
    closing the generator closes its HTTP response, which is what makes the provider stop generating."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


class ModelError(Exception):
    """A model call failed. ``transient`` errors (timeouts, 429, 5xx) may be retried by callers."""

    def __init__(self, message: str, *, transient: bool = False, status: int | None = None):
        super().__init__(message)
        self.transient = transient
        self.status = status


class ModelDeadline(ModelError):
    """The model sent nothing for longer than a configured bound (``model_first_token_seconds``,
    ``model_stall_seconds``). Never retried: the model just used the whole budget, and retrying would
    multiply the user's wait."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


@runtime_checkable
class ChatModel(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def supports_tools(self) -> bool:
        """False → the agent uses the text ReAct protocol."""
        ...

    async def chat(self, messages: Sequence[ChatMessage],
                   options: ChatOptions | None = None) -> ChatResponse: ...

    def stream(self, messages: Sequence[ChatMessage],
               options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        ...


@runtime_checkable
class ChatModels(Protocol):
    """Resolves a chat model by id (a tenant's model row, or a ``provider:model`` spec); ``None`` → the
    default (the extractive answerer when no generative model is configured)."""

    async def get(self, model_id: str | None = None, *, tenant_id: int | None = None) -> ChatModel: ...

    async def close(self) -> None: ...


class ChatModelWrapper:
    """The base of a ``ChatModel`` that adds behaviour around another one (deadlines, metering, a turn's usage
    count) and forwards everything else, so wrappers stack in any order and a caller probing an optional
    capability (``generative``, ``close``) still finds the innermost model's."""

    def __init__(self, inner: ChatModel) -> None:
        self._inner = inner

    @property
    def inner(self) -> ChatModel:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def supports_tools(self) -> bool:
        return self._inner.supports_tools

    def __getattr__(self, name: str) -> Any:
        # Optional capabilities callers probe with getattr (``generative``, ``close``) stay the inner model's.
        return getattr(self._inner, name)
