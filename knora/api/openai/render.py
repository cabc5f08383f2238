"""A turn's stream entries → OpenAI chat completion objects (docs/openai-api.md).

Both paths — an unsaved turn and a stored one read back from its log — produce the same entries, so one
renderer serves both: ``answer`` text becomes ``delta.content`` with citations as ``[n]`` marks,
``thinking`` text and tool calls ``delta.reasoning_content`` (the field DeepSeek-style clients show as the
model's thinking), ``references`` are kept for the final chunk, and an error frame that ends the answer is
kept as ``knora_errors``. The final chunk carries the sources list as text and the structured references
(``knora_references``: Knora's reference objects, ``knora_citations``: what each ``[n]`` names).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import asdict
from typing import Any

from knora.domain.stream import StreamEvent
from knora.services.citations.numbered import NumberedCitations, Source
from knora.services.openai_api.conversation import SOURCES_RULE, Conversation

DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": keep-alive\n\n"
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + _encode(payload).encode() + b"\n\n"


def _md(text: str) -> str:
    return text.replace("[", "(").replace("]", ")").replace("\n", " ")


def sources_text(sources: list[Source]) -> str:
    """The list appended to an answer: ``SOURCES_RULE`` then one Markdown line per source."""
    if not sources:
        return ""
    lines = [f"- [{s.number}] [{_md(s.title)}]({s.url})" if s.kind == "web" and s.url
             else f"- [{s.number}] {_md(s.title)}" for s in sources]
    return SOURCES_RULE + "\n" + "\n".join(lines)


def estimate_tokens(text: str) -> int:
    """About four characters a token (OpenAI's rule of thumb); labelled as an estimate where it is used."""
    return math.ceil(len(text) / 4) if text else 0


class CompletionRenderer:
    def __init__(self, model: str, conversation: Conversation) -> None:
        self.model = model
        self.conversation = conversation
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.numbers = NumberedCitations()
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._raw_reasoning: list[str] = []  # as the entries had it, for the collected answer's own numbering
        self.references: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.stopped = False

    # --- entries --------------------------------------------------------------------------------------------
    def delta(self, event: StreamEvent) -> dict[str, Any] | None:
        """The delta one entry adds, or None."""
        kind = event.type
        if kind == "answer":
            text = self.numbers.feed(event.content, "answer")
            if text:
                self.content.append(text)
                return {"content": text}
        elif kind == "thinking":
            self._raw_reasoning.append(event.content)
            text = self.numbers.feed(event.content, "thinking")
            if event.done:
                text += self.numbers.flush("thinking")
            if text:
                self.reasoning.append(text)
                return {"reasoning_content": text}
        elif kind == "tool_call":
            text = f"\n{event.content}\n"
            self._raw_reasoning.append(text)
            self.reasoning.append(text)
            return {"reasoning_content": text}
        elif kind == "references":
            self.references = list(event.data.get("references") or [])
        elif kind == "error" and event.done:
            self.errors.append(event.content)
        elif kind == "stop":
            self.stopped = True
        return None

    def tail(self) -> dict[str, Any]:
        """The last delta: held text, the sources list, and the structured references."""
        text = self.numbers.flush("answer")
        reasoning = self.numbers.flush("thinking")
        if text:
            self.content.append(text)
        footer = sources_text(list(self.numbers.sources.values()))
        delta: dict[str, Any] = {"content": text + footer}
        if reasoning:
            delta["reasoning_content"] = reasoning
        return {**delta, **self.extras()}

    def extras(self) -> dict[str, Any]:
        out: dict[str, Any] = {"knora_references": self.references,
                               "knora_citations": [asdict(s) for s in self.numbers.sources.values()]}
        if self.errors:
            out["knora_errors"] = self.errors
        return out

    @property
    def failed(self) -> bool:
        """An error ended the turn before any answer text."""
        return bool(self.errors) and not "".join(self.content).strip()

    # --- objects --------------------------------------------------------------------------------------------
    def usage(self, reported: dict[str, int] | None = None) -> dict[str, Any]:
        if reported:
            return {**reported, "estimated": False}
        asked = self.conversation.query + "".join(h.query + h.answer for h in self.conversation.history)
        prompt = estimate_tokens(asked)
        completion = estimate_tokens("".join(self.content) + "".join(self.reasoning))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "estimated": True}

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, *,
              with_usage: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
        if with_usage:
            body["usage"] = None
        return body

    def usage_chunk(self, reported: dict[str, int] | None = None) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "system_fingerprint": None, "choices": [], "usage": self.usage(reported)}

    def completion(self, answer: str, references: list[dict[str, Any]],
                   reported: dict[str, int] | None = None) -> dict[str, Any]:
        """The non-streamed object for the turn's final answer (public tags, as saved: an agent's preambles
        before its tool calls are not in it) and the reasoning the entries carried."""
        numbers = NumberedCitations()
        content = numbers.render(answer)
        thought = numbers.render("".join(self._raw_reasoning))
        self.content, self.reasoning, self.numbers = [content], [thought], numbers
        self.references = references
        footer = sources_text(list(numbers.sources.values()))
        message: dict[str, Any] = {"role": "assistant", "content": content + footer, "refusal": None}
        if thought:
            message["reasoning_content"] = thought
        message.update(self.extras())
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
                "usage": self.usage(reported)}
