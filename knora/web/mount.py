"""Serve the web UI (``knora/web/static``) at ``/`` with an ``index.html`` fallback for client-side routes.

The UI is a no-build set of ES modules, so a fresh checkout works right after ``make run``. The catch-all
route is added after every API router, and it refuses the paths that belong to the server (``/api``,
``/docs``, ``/health``, ``/openapi.json``…) so an unknown API path still answers 404 instead of the UI's HTML.

Every file it serves carries ``CONTENT_SECURITY_POLICY``: the UI holds the tenant's API key in localStorage,
so a script that slipped into a rendered answer must neither run nor send anything anywhere.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response
from starlette.exceptions import HTTPException

STATIC_DIR = Path(__file__).resolve().parent / "static"

# Prefixes the UI must never shadow (the API, FastAPI's docs, the health probe, WeKnora's file proxies).
RESERVED_PREFIXES: tuple[str, ...] = ("api/", "docs", "redoc", "openapi.json", "health", "files", "r/",
                                      "swagger", "mcp/", "v1/")

mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/css", ".css")

# The UI needs nothing beyond its own origin: ES modules and one stylesheet (no inline <script> or <style>;
# the few computed styles are set through the CSSOM, which CSP allows), fetch/XHR/SSE to /api, and a data: URL
# for the favicon and blob: URLs for a document's images in the chunk viewer (img-src; fetched from /api with
# the key, knora/web/static/js/api.js imageURL). Remote images in answers are rendered as links (markdown.js),
# so img-src stays closed to other hosts and an answer cannot leak text through an image URL.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data: blob:",
    "connect-src 'self'", "object-src 'none'", "base-uri 'self'", "frame-ancestors 'none'",
    "form-action 'self'"))

_HEADERS = {"Cache-Control": "no-cache", "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}


def _is_reserved(path: str) -> bool:
    return path == "api" or any(path == p.rstrip("/") or path.startswith(p) for p in RESERVED_PREFIXES)


# The catch-all routes' paths, and what they really serve for a path (they take every method only to answer
# 404 for a wrong one, as gin does): a 405's ``Allow`` header counts these, not the route's method list.
UI_ROUTE_PATHS = frozenset({"/", "/{path:path}"})


def ui_methods(path: str) -> frozenset[str]:
    return frozenset() if _is_reserved(path.lstrip("/")) else frozenset({"GET", "HEAD"})


def resolve_static(path: str, root: Path = STATIC_DIR) -> Path | None:
    """The file under ``root`` that ``path`` names, or None (missing, a directory, or escaping ``root``)."""
    if not path:
        return None
    candidate = (root / path).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate


def mount(app: FastAPI, root: Path = STATIC_DIR) -> None:
    index = root / "index.html"

    async def serve(request: Request, path: str = "") -> Response:
        if _is_reserved(path):
            raise HTTPException(status_code=404)
        if request.method not in ("GET", "HEAD"):
            raise HTTPException(status_code=404)  # gin answers 404 for a wrong method too (api §1.1)
        found = resolve_static(path, root)
        if found is not None:
            return FileResponse(found, headers=_HEADERS)
        last = path.rsplit("/", 1)[-1]
        if "." in last:  # a missing asset, not a client route
            raise HTTPException(status_code=404)
        return FileResponse(index, media_type="text/html", headers=_HEADERS)

    # Every method, so that a POST to an unknown /api path answers 404 (not 405 from a partial match here).
    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
    for route_path in sorted(UI_ROUTE_PATHS):
        app.add_api_route(route_path, serve, methods=methods, include_in_schema=False)
