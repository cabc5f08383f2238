"""Errors under ``/v1`` in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

The rest of the app answers every failure with Knora's envelope, from one set of handlers and middlewares
(authentication, the body limit, the rate limiter, validation, unknown routes). Rather than teach each of them
a second dialect, this middleware, mounted outside them, rewrites an error response under the prefix into
OpenAI's shape on its way out: the status is kept, the envelope's message becomes ``message``, and ``type``
and ``code`` follow the status — or the route's own choice, given as ``openai_fields`` in the error's
``details`` (``model_not_found``, the ``param`` of a bad field). Success responses, streams included, pass
untouched; an error body is small and complete in its first message (a JSON response), so holding it costs
nothing, and a body the limiter sends before draining the rest of an upload still goes out first.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

OPENAI_PREFIX = "/v1"

_BY_STATUS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    409: ("invalid_request_error", "conflict"),
    413: ("invalid_request_error", "request_too_large"),
    422: ("invalid_request_error", "invalid_request"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}


def openai_fields(code: str, param: str | None = None,
                  type_: str = "invalid_request_error") -> dict[str, Any]:
    """``details`` for an ``AppError`` raised under ``/v1`` that wants its own OpenAI ``code``/``param``."""
    return {"openai": {"type": type_, "code": code, "param": param}}


def error_body(status: int, message: str, *, type_: str | None = None, code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    default_type, default_code = _BY_STATUS.get(status, ("server_error", "internal_error"))
    return {"error": {"message": message, "type": type_ or default_type, "param": param,
                      "code": code or default_code}}


def translate(status: int, raw: bytes) -> bytes:
    """An error response's body in OpenAI's shape (a body already in it is kept)."""
    try:
        data = json.loads(raw) if raw.strip() else None
    except ValueError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and "type" in err and "message" in err:
        return raw
    if isinstance(err, dict):
        message = str(err.get("message") or "")
        details = err.get("details")
        chosen = details.get("openai") if isinstance(details, dict) else None
        if isinstance(chosen, dict):
            body = error_body(status, message, type_=chosen.get("type"), code=chosen.get("code"),
                              param=chosen.get("param"))
            return json.dumps(body, ensure_ascii=False).encode()
    else:
        message = raw.decode("utf-8", "replace").strip()
    return json.dumps(error_body(status, message or f"HTTP {status}"), ensure_ascii=False).encode()


def is_openai_path(path: str) -> bool:
    return path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/")


class OpenAIErrorsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_openai_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        held = b""
        passing = True

        async def send_translated(message: Message) -> None:
            nonlocal start, held, passing
            if message["type"] == "http.response.start":
                if message["status"] < 400:
                    await send(message)
                    return
                start, passing = message, False
                return
            if passing or start is None or message["type"] != "http.response.body":
                await send(message)
                return
            held += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if more:
                try:
                    json.loads(held)
                except ValueError:
                    return  # not whole yet
            body = translate(start["status"], held)
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() not in (b"content-length", b"content-type")]
            headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": headers})
            start, passing = None, True
            await send({"type": "http.response.body", "body": body, "more_body": more})

        await self.app(scope, receive, send_translated)
