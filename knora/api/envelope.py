"""WeKnora's response envelope (api §1.3, §1.4).

Bodies are rendered by ``json.dumps`` directly; only values it cannot encode itself (datetimes, UUIDs, enums
that are not str/int, pydantic models, sets, bytes…) go through FastAPI's ``jsonable_encoder``. Routes mostly
hand over ``model_dump(mode="json")`` output already, and walking such a body again with ``jsonable_encoder``
cost ~0.5 ms per document row — a list of a few hundred documents took tens of milliseconds of event-loop time
per request.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse


def _fallback(value: Any) -> Any:
    encoded = jsonable_encoder(value)
    if encoded is value:  # jsonable_encoder gave up on it; let json.dumps raise its usual TypeError
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    return encoded


class EnvelopeResponse(JSONResponse):
    """A JSONResponse whose content may hold non-JSON values; they are encoded as ``jsonable_encoder``
    would."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"),
                          default=_fallback).encode("utf-8")


def ok(data: Any = None, *, status: int = 200, message: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"success": True}
    if data is not None:
        body["data"] = data
    if message is not None:
        body["message"] = message
    body.update(extra)
    return EnvelopeResponse(body, status_code=status)


def page(items: list[Any], *, total: int, page: int, page_size: int) -> JSONResponse:
    return ok(items, total=total, page=page, page_size=page_size)


def error(status: int, code: int, message: str, details: Any = None) -> JSONResponse:
    err: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        err["details"] = details
    return EnvelopeResponse({"success": False, "error": err}, status_code=status)
