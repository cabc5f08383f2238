"""The API's documentation pages, served from this install: Swagger UI at ``/docs`` and ReDoc at ``/redoc``,
their scripts and styles from the ``fastapi-offline`` package's copies (FastAPI's own pages load them from a
CDN, so ``/docs`` was blank offline or behind a proxy that blocks it)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS_PATH = "/docs-assets"
# The pages' own inline bootstrap scripts and styles run; nothing loads from or talks to another host (ReDoc
# would fetch its sponsor's logo from a CDN, which this refuses).
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'", "script-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:", "font-src 'self' data:", "connect-src 'self'", "worker-src 'self' blob:",
    "object-src 'none'", "base-uri 'self'", "frame-ancestors 'none'", "form-action 'self'"))
_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin"}


def _assets_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def _closed(page: HTMLResponse) -> HTMLResponse:
    page.headers.update(_HEADERS)
    return page


def install_docs(app: FastAPI, *, openapi_url: str = "/openapi.json") -> None:
    """Adds ``/docs``, ``/docs/oauth2-redirect``, ``/redoc`` and the assets they load (create the app with
    ``docs_url=None, redoc_url=None``)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=_assets_dir()), name="docs-assets")
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return _closed(get_swagger_ui_html(openapi_url=openapi_url, title=title,
                                   oauth2_redirect_url="/docs/oauth2-redirect",
                                   swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS_PATH}/favicon.png"))

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def oauth2_redirect() -> HTMLResponse:
        return _closed(get_swagger_ui_oauth2_redirect_html())

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return _closed(get_redoc_html(openapi_url=openapi_url, title=title,
                              redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS_PATH}/favicon.png", with_google_fonts=False))
