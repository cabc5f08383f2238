"""The request body of ``POST /v1/chat/completions``, as OpenAI's clients send it (docs/openai-api.md).

Unknown fields are ignored (clients send many: ``tools``, ``response_format``, ``seed``, ``logit_bias`` …);
the fields Knora cannot honour are refused (``n`` > 1). ``temperature``, ``top_p``, ``max_tokens``,
``max_completion_tokens``, ``stop``, ``user`` are accepted and not applied: the tenant's agent or pipeline
settings decide them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from knora.api.openai.errors import openai_fields
from knora.domain.errors import BadRequest


class ContentPart(BaseModel):
    """One part of a message's content list; only ``text`` parts carry text (images are not read)."""

    model_config = ConfigDict(extra="ignore")

    type: str = "text"
    text: str | None = None


class ClientChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "\n".join(p.text for p in self.content if p.type in ("text", "input_text") and p.text)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: Annotated[str, Field(min_length=1)]
    messages: Annotated[list[ClientChatMessage], Field(min_length=1)]
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: int | None = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    user: str | None = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


def parse_request(data: Any) -> ChatCompletionRequest:
    """The body as a request; a 400 naming the first bad field as ``param`` otherwise."""
    if not isinstance(data, dict):
        raise BadRequest("The request body must be a JSON object", details=openai_fields("invalid_request"))
    try:
        req = ChatCompletionRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise BadRequest(msg, details=openai_fields("invalid_value", param)) from exc
    if req.n not in (None, 1):
        raise BadRequest("Only n=1 is supported: Knora gives one answer per request",
                         details=openai_fields("unsupported_value", "n"))
    return req
