"""OpenAI-compatible chat models through the official ``openai`` client.

One adapter covers OpenAI, vLLM, DeepSeek, Qwen/DashScope, Xinference, LM Studio, SiliconFlow … — they differ
only in base URL and in where reasoning arrives: a ``reasoning_content`` (DeepSeek, Qwen) or ``reasoning``
(vLLM, OpenRouter) delta field, or inline ``<think>`` tags, which are split into the reasoning channel here
(``domain/think.py``) so callers see one shape. Tool calls arrive as fragments keyed by index; they are
assembled and delivered whole on the final chunk, because a half-assembled call is useless to every caller.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta, ChoiceDeltaToolCall

from knora.domain.think import OPEN, ThinkSplitter, split_think
from knora.netguard import AddressRefused
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, ModelError, ToolCall, Usage

# ChatOptions.extra keys that mean something to other providers and must not reach the wire.
_PRIVATE_EXTRA = {"passages", "purpose", "query"}


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.images and m.role == "user":  # OpenAI vision parts: the text, then each image
            item["content"] = [{"type": "text", "text": m.content},
                               *({"type": "image_url", "image_url": {"url": url}} for url in m.images)]
        if m.role == "assistant" and m.tool_calls:
            item["tool_calls"] = [{"id": tc.id, "type": "function",
                                   "function": {"name": tc.name, "arguments": tc.arguments}}
                                  for tc in m.tool_calls]
            if not m.content:
                item["content"] = None
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id or ""
        if m.name and m.role != "tool":
            item["name"] = m.name
        out.append(item)
    return out


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    return Usage(prompt_tokens=raw.prompt_tokens or 0, completion_tokens=raw.completion_tokens or 0,
                 total_tokens=raw.total_tokens or 0)


def _reasoning_of(obj: Any) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = getattr(obj, key, None)
        if value is None and getattr(obj, "model_extra", None):
            value = obj.model_extra.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def map_error(exc: Exception) -> ModelError:
    """Timeouts, connection failures, 429 and 5xx are transient (worth a retry); the rest are not. A refusal
    by the outbound policy (raised by the pinned transport; older clients wrap it as a connection error)
    keeps its reason and is final."""
    refused = exc if isinstance(exc, AddressRefused) else exc.__cause__
    if isinstance(refused, AddressRefused):
        return ModelError(f"model not reachable: {refused}", transient=refused.retryable)
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return ModelError(f"model unreachable: {exc}", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        transient = status == 429 or status >= 500
        return ModelError(f"model error {status}: {exc.message}", transient=transient, status=status)
    return ModelError(f"model call failed: {exc}", transient=False)


class OpenAIChatModel:
    """A ``ChatModel`` speaking ``/v1/chat/completions``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 model_id: str | None = None, timeout: float = 120.0, max_retries: int = 2,
                 supports_tools: bool = True, thinking_param: str | None = None,
                 include_usage: bool = True, client: openai.AsyncOpenAI | None = None,
                 transport: httpx2.AsyncBaseTransport | None = None) -> None:
        """``transport``: what the client connects through (the registry passes a
        :class:`~knora.netguard.PinnedTransport` carrying the outbound policy)."""
        self._model = model
        self._model_id = model_id or f"openai:{model}"
        self._supports_tools = supports_tools
        self._thinking_param = thinking_param  # None | "enable_thinking" | "chat_template_kwargs"
        self._include_usage = include_usage
        http = openai.DefaultAsyncHttpxClient(transport=transport) if transport is not None else None
        self._client = client or openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                                    timeout=timeout, max_retries=max_retries,
                                                    http_client=http)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def supports_tools(self) -> bool:
        return self._supports_tools

    async def close(self) -> None:
        await self._client.close()

    def _request(self, messages: Sequence[ChatMessage], options: ChatOptions | None,
                 stream: bool) -> dict[str, Any]:
        opts = options or ChatOptions()
        kwargs: dict[str, Any] = {"model": self._model, "messages": to_openai_messages(messages)}
        if opts.temperature is not None:
            kwargs["temperature"] = opts.temperature
        if opts.max_tokens is not None:
            kwargs["max_tokens"] = opts.max_tokens
        if opts.tools:
            kwargs["tools"] = opts.tools
            if opts.tool_choice:
                kwargs["tool_choice"] = opts.tool_choice
        if opts.response_format:
            kwargs["response_format"] = opts.response_format
        extra_body: dict[str, Any] = dict(opts.extra.get("extra_body") or {})
        if opts.thinking is not None and self._thinking_param == "enable_thinking":
            extra_body["enable_thinking"] = opts.thinking
        elif opts.thinking is not None and self._thinking_param == "chat_template_kwargs":
            extra_body["chat_template_kwargs"] = {"enable_thinking": opts.thinking}
        for key, value in opts.extra.items():
            if key not in _PRIVATE_EXTRA and key != "extra_body":
                extra_body[key] = value
        if extra_body:
            kwargs["extra_body"] = extra_body
        if stream:
            kwargs["stream"] = True
            if self._include_usage:
                kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        try:
            request = self._request(messages, options, stream=False)
            resp = await self._client.chat.completions.create(**request)
        except (openai.OpenAIError, AddressRefused) as exc:
            raise map_error(exc) from exc
        if not resp.choices:
            raise ModelError("model returned no choices", transient=True)
        choice = resp.choices[0]
        msg = choice.message
        content = msg.content or ""
        reasoning = _reasoning_of(msg)
        if OPEN in content:
            content, inline = split_think(content)
            reasoning = reasoning or inline
        calls = [ToolCall(id=tc.id, name=tc.function.name, arguments=tc.function.arguments or "{}")
                 for tc in (msg.tool_calls or []) if getattr(tc, "function", None) is not None]
        return ChatResponse(content=content, reasoning_content=reasoning, tool_calls=calls,
                            finish_reason=choice.finish_reason, usage=_usage(resp.usage))

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        request = self._request(messages, options, stream=True)
        try:
            response = await self._client.chat.completions.create(**request)
        except (openai.OpenAIError, AddressRefused) as exc:
            raise map_error(exc) from exc
        state = _StreamState()
        try:
            # ``async with``: however this generator ends — finished, closed by a caller leaving early,
            # cancelled by a stop or a deadline — the HTTP response is closed now, so the provider stops
            # generating (left to garbage collection, a stopped turn kept the request open to the end).
            async with response:
                async for chunk in response:
                    if chunk.usage is not None:
                        state.usage = _usage(chunk.usage)
                    for choice in chunk.choices:
                        piece = state.choice(choice)
                        if piece is not None:
                            yield piece
                        elif choice.delta is not None and choice.delta.tool_calls:
                            yield ChatChunk()  # progress: a tool call is arriving (resets a stall deadline)
        except (openai.OpenAIError, AddressRefused) as exc:
            raise map_error(exc) from exc
        except Exception as exc:
            if isinstance(exc, ModelError):
                raise
            raise ModelError(f"stream interrupted: {exc}", transient=True) from exc
        yield state.last()


@dataclass
class _StreamState:
    """One stream's running state: inline ``<think>`` split off, tool-call fragments assembled by index, the
    finish reason and usage kept for the last chunk (delivered whole, because half a call is useless)."""

    splitter: ThinkSplitter = field(default_factory=ThinkSplitter)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    usage: Usage | None = None
    answer_started: bool = False
    saw_think: bool = False

    def choice(self, choice: Choice) -> ChatChunk | None:
        """One choice delta → the answer/reasoning text to stream now (``None`` when there is none)."""
        delta = choice.delta
        answer, reasoning = self._text(delta) if delta is not None else ("", "")
        for tc in (delta.tool_calls or []) if delta is not None else []:
            self._tool_fragment(tc)
        if choice.finish_reason:
            self.finish = choice.finish_reason
        return ChatChunk(content=answer, reasoning_content=reasoning) if answer or reasoning else None

    def _text(self, delta: ChoiceDelta) -> tuple[str, str]:
        reasoning = _reasoning_of(delta)
        answer = ""
        if delta.content:
            answer, inline = self.splitter.feed(delta.content)
            self.saw_think = self.saw_think or bool(inline) or self.splitter.inside
            reasoning += inline
        if answer and not self.answer_started and self.saw_think:
            answer = answer.lstrip()  # the blank lines a closing </think> leaves before the answer
        self.answer_started = self.answer_started or bool(answer)
        return answer, reasoning

    def _tool_fragment(self, tc: ChoiceDeltaToolCall) -> None:
        slot = self.calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
        if tc.id:
            slot["id"] = tc.id
        if tc.function is not None:
            slot["name"] += tc.function.name or ""
            slot["arguments"] += tc.function.arguments or ""

    def last(self) -> ChatChunk:
        """The held-back tail, the assembled tool calls, finish reason and usage."""
        tail_answer, tail_reasoning = self.splitter.flush()
        finish = self.finish
        if finish is None:
            if not (self.answer_started or self.saw_think or self.calls):
                raise ModelError("stream ended without any output", transient=True)
            finish = "stop"  # some compatible servers never send a finish reason
        assembled = [ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"] or "{}")
                     for i, s in sorted(self.calls.items())]
        content = tail_answer if self.answer_started or not self.saw_think else tail_answer.lstrip()
        return ChatChunk(content=content, reasoning_content=tail_reasoning, tool_calls=assembled,
                         finish_reason=finish, usage=self.usage)


def dumps_arguments(arguments: Any) -> str:
    """Tool-call arguments as the JSON text the wire expects (helper for callers building messages)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
