"""Every failure becomes the envelope with the right status; never a bare 500 with a traceback."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from knora.api.envelope import error
from knora.domain.errors import AppError

log = logging.getLogger(__name__)

_STATUS_CODES = {400: 1000, 401: 1001, 403: 1002, 404: 1003, 405: 1004, 409: 1005, 413: 1000, 422: 1010,
                 429: 1006, 503: 1008}


def install(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_req: Request, exc: AppError) -> JSONResponse:
        return error(exc.status, exc.code, exc.message, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _validation(_req: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        details = [{"loc": list(e.get("loc", [])), "msg": e.get("msg", "")} for e in errors]
        fields = "; ".join(f"{'.'.join(str(p) for p in d['loc'] if p != 'body')}: {d['msg']}"
                           for d in details)
        msg = "Malformed JSON body" if malformed else fields or "Invalid request"
        return error(400, 1000 if malformed else 1010, msg, details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(req: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and not req.url.path.startswith("/api/"):
            return PlainTextResponse("404 page not found", status_code=404)
        return error(exc.status_code, _STATUS_CODES.get(exc.status_code, 1000), str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_req: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error(500, 1007, "Internal server error")
