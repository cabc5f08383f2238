"""Ollama's native ``/api/chat`` (NDJSON streaming) through httpx.

Ollama also serves an OpenAI-compatible endpoint, but the native one is the only way to pass ``think`` and
``num_ctx``/``num_predict`` portably and to get the separate ``thinking`` field from older servers.
Tool calls arrive whole (arguments as an object), so there is nothing to assemble — only to re-serialise.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from knora.domain.think import ThinkSplitter, split_think
from knora.ports.chat import ChatChunk, ChatMessage, ChatOptions, ChatResponse, ModelError, ToolCall, Usage


def _messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.images and m.role == "user":  # Ollama takes bare base64 images beside the text
            item["images"] = [url.partition(",")[2] if url.startswith("data:") else url for url in m.images]
        if m.tool_calls:
            calls = []
            for tc in m.tool_calls:
                try:
                    args: Any = json.loads(tc.arguments or "{}")
                except json.JSONDecodeError:
                    args = {}
                calls.append({"function": {"name": tc.name, "arguments": args}})
            item["tool_calls"] = calls
        if m.role == "tool" and m.name:
            item["tool_name"] = m.name
        out.append(item)
    return out


def _tool_calls(raw: list[dict[str, Any]] | None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for c in raw or []:
        fn = c.get("function") or {}
        args = fn.get("arguments", {})
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        calls.append(ToolCall(id=c.get("id") or f"call_{uuid.uuid4().hex[:12]}", name=fn.get("name", ""),
                              arguments=text))
    return calls


def _usage(body: dict[str, Any]) -> Usage | None:
    if "prompt_eval_count" not in body and "eval_count" not in body:
        return None
    p, c = int(body.get("prompt_eval_count") or 0), int(body.get("eval_count") or 0)
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=p + c)


class OllamaChatModel:
    def __init__(self, model: str, *, base_url: str | None = None, model_id: str | None = None,
                 timeout: float = 300.0, supports_tools: bool = True,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        root = (base_url or "http://127.0.0.1:11434").rstrip("/")
        root = root.removesuffix("/v1")
        self._model = model
        self._model_id = model_id or f"ollama:{model}"
        self._supports_tools = supports_tools
        self._http = httpx.AsyncClient(base_url=root, timeout=timeout, transport=transport)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def supports_tools(self) -> bool:
        return self._supports_tools

    async def close(self) -> None:
        await self._http.aclose()

    def _body(self, messages: Sequence[ChatMessage], options: ChatOptions | None,
              stream: bool) -> dict[str, Any]:
        opts = options or ChatOptions()
        body: dict[str, Any] = {"model": self._model, "messages": _messages(messages), "stream": stream}
        model_opts: dict[str, Any] = {}
        if opts.temperature is not None:
            model_opts["temperature"] = opts.temperature
        if opts.max_tokens is not None:
            model_opts["num_predict"] = opts.max_tokens
        if model_opts:
            body["options"] = model_opts
        if opts.tools:
            body["tools"] = opts.tools
        if opts.thinking is not None:
            body["think"] = opts.thinking
        fmt = opts.response_format or {}
        if fmt.get("type") == "json_schema":
            body["format"] = (fmt.get("json_schema") or {}).get("schema") or "json"
        elif fmt.get("type") == "json_object":
            body["format"] = "json"
        return body

    @staticmethod
    def _error(exc: Exception) -> ModelError:
        if isinstance(exc, httpx.HTTPStatusError):
            status = exc.response.status_code
            return ModelError(f"ollama error {status}", transient=status == 429 or status >= 500,
                              status=status)
        return ModelError(f"ollama unreachable: {exc}", transient=True)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ChatResponse:
        try:
            resp = await self._http.post("/api/chat", json=self._body(messages, options, stream=False))
            resp.raise_for_status()
            body = resp.json()
        except httpx.HTTPError as exc:
            raise self._error(exc) from exc
        msg = body.get("message") or {}
        content, inline = split_think(msg.get("content") or "")
        return ChatResponse(content=content, reasoning_content=msg.get("thinking") or inline,
                            tool_calls=_tool_calls(msg.get("tool_calls")),
                            finish_reason=body.get("done_reason") or "stop", usage=_usage(body))

    async def stream(self, messages: Sequence[ChatMessage],
                     options: ChatOptions | None = None) -> AsyncIterator[ChatChunk]:
        splitter = ThinkSplitter()
        calls: list[ToolCall] = []
        try:
            request = self._body(messages, options, True)
            async with self._http.stream("POST", "/api/chat", json=request) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    resp.raise_for_status()
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    body = json.loads(line)
                    if body.get("error"):
                        raise ModelError(f"ollama: {body['error']}", transient=False)
                    msg = body.get("message") or {}
                    answer, inline = splitter.feed(msg.get("content") or "")
                    reasoning = (msg.get("thinking") or "") + inline
                    calls.extend(_tool_calls(msg.get("tool_calls")))
                    if body.get("done"):
                        tail_a, tail_r = splitter.flush()
                        if answer or reasoning:
                            yield ChatChunk(content=answer, reasoning_content=reasoning)
                        finish = "tool_calls" if calls else (body.get("done_reason") or "stop")
                        yield ChatChunk(content=tail_a, reasoning_content=tail_r, tool_calls=calls,
                                        finish_reason=finish, usage=_usage(body))
                        return
                    if answer or reasoning:
                        yield ChatChunk(content=answer, reasoning_content=reasoning)
        except httpx.HTTPError as exc:
            raise self._error(exc) from exc
        raise ModelError("ollama stream ended before done", transient=True)
