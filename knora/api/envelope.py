"""WeKnora's response envelope (api §1.3, §1.4)."""

from __future__ import annotations

from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse


def ok(data: Any = None, *, status: int = 200, message: str | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"success": True}
    if data is not None:
        body["data"] = data
    if message is not None:
        body["message"] = message
    body.update(extra)
    return JSONResponse(jsonable_encoder(body), status_code=status)


def page(items: list[Any], *, total: int, page: int, page_size: int) -> JSONResponse:
    return ok(items, total=total, page=page, page_size=page_size)


def error(status: int, code: int, message: str, details: Any = None) -> JSONResponse:
    err: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        err["details"] = details
    return JSONResponse(jsonable_encoder({"success": False, "error": err}), status_code=status)
