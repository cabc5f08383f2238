"""The FastAPI application: ``create_app(settings)``. Routers live one per file in ``knora.api.routes``."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from knora import __version__
from knora.api import errors
from knora.api.request_id import RequestIdMiddleware
from knora.container import Container
from knora.settings import Settings

# Each module exposes ``router`` (an APIRouter mounted under /api/v1). Missing modules are skipped.
ROUTERS: tuple[str, ...] = (
    "knora.api.routes.chat",  # first: a chat request is matched before the other routers' routes are tried
    "knora.api.routes.system",
    "knora.api.routes.knowledge_bases",
    "knora.api.routes.knowledge",
    "knora.api.routes.chunks",
    "knora.api.routes.tags",
    "knora.api.routes.models",
    "knora.api.routes.search",
    "knora.api.routes.faq",
    "knora.api.routes.sessions",
    "knora.api.routes.messages",
    "knora.api.routes.agents",
    "knora.api.routes.mcp_services",
)

API_PREFIX = "/api/v1"


def create_app(settings: Settings | None = None, *, container: Container | None = None) -> FastAPI:
    settings = settings or (container.settings if container else Settings())
    owned = container is None
    container = container or Container(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await container.start()
        try:
            yield
        finally:
            if owned:
                await container.close()

    app = FastAPI(title="Knora", version=__version__, lifespan=lifespan, docs_url="/docs",
                  openapi_url="/openapi.json", redirect_slashes=True)
    app.state.container = container
    errors.install(app)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.cors_origins,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=["Origin", "Content-Type", "Accept", "Authorization", "X-API-Key", "X-Request-ID",
                       "X-Tenant-ID", "Last-Event-ID"],
        expose_headers=["X-Request-ID"],
    )

    app.add_middleware(RequestIdMiddleware)  # outermost: error responses get the id too

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    for module_path in ROUTERS:
        try:
            module = importlib.import_module(module_path)
        except ModuleNotFoundError as exc:
            if exc.name == module_path:
                continue
            raise
        app.include_router(module.router, prefix=API_PREFIX)

    try:
        web = importlib.import_module("knora.web.mount")
    except ModuleNotFoundError as exc:
        if exc.name != "knora.web.mount":
            raise
    else:
        web.mount(app)
    return app
