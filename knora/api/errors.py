"""Every failure becomes the envelope with the right status; never a bare 500 with a traceback."""

from __future__ import annotations

import logging
import math

import asyncpg.exceptions as asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from knora.adapters.db.unavailable import unavailability
from knora.api.envelope import error
from knora.domain.errors import AppError, TooManyRequests
from knora.web.mount import UI_ROUTE_PATHS, ui_methods

log = logging.getLogger(__name__)

_STATUS_CODES = {400: 1000, 401: 1001, 403: 1002, 404: 1003, 405: 1004, 409: 1005, 413: 1000, 422: 1010,
                 429: 1006, 503: 1008}


# Seconds to wait before retrying: a lock or a full pool clears in a moment, an outage takes longer.
_RETRY_AFTER = {"busy": 1, "down": 5}
_UNAVAILABLE = {"busy": "The database is busy; retry in a moment",
                "down": "The database is unavailable; retry shortly"}

_PROBED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(req: Request) -> str:
    """The ``Allow`` header of a 405 (RFC 9110 §15.5.6): every method some route on this path accepts.

    Starlette's own 405 names only the first route that matched the path, but FastAPI registers one route per
    method (``GET`` and ``POST /knowledge-bases`` are two), so that list would be incomplete. Each method is
    probed through the routes' public ``matches`` (included routers nest their routes). A wrong method that
    the UI catch-all takes is a 404, as in gin; a 405 is left for the methods it does not take.
    """
    allowed: set[str] = set()
    for route in req.app.router.routes:
        if getattr(route, "path", None) in UI_ROUTE_PATHS:
            if route.matches(req.scope)[0] != Match.NONE:
                allowed |= ui_methods(req.url.path)
            continue
        allowed |= {m for m in _PROBED_METHODS if route.matches({**req.scope, "method": m})[0] == Match.FULL}
    return ", ".join(sorted(allowed))


def install(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_req: Request, exc: AppError) -> JSONResponse:
        response = error(exc.status, exc.code, exc.message, exc.details)
        if isinstance(exc, TooManyRequests):
            response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
        return response

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
        resp = error(exc.status_code, _STATUS_CODES.get(exc.status_code, 1000), str(exc.detail))
        resp.headers.update(exc.headers or {})
        if exc.status_code == 405:
            resp.headers["Allow"] = allowed_methods(req)
        return resp

    async def _unexpected(_req: Request, exc: Exception) -> Response:
        reason = unavailability(exc)
        if reason is None:
            log.exception("unhandled error", exc_info=exc)
            return error(500, 1007, "Internal server error")
        log.warning("database %s: %s: %s", reason, type(exc).__name__, exc)
        resp = error(503, 1008, _UNAVAILABLE[reason], {"retry_after": _RETRY_AFTER[reason]})
        resp.headers["Retry-After"] = str(_RETRY_AFTER[reason])
        return resp

    # Registered for the database's error types too, so that they are answered by the inner exception
    # middleware (which does not re-raise) rather than only by the outermost catch-all.
    for kind in (Exception, SQLAlchemyError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
        app.add_exception_handler(kind, _unexpected)
