"""The FastAPI application: ``create_app(settings)``. Routers live one per file in ``knora.api.routes``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from starlette.routing import Route

from knora import __version__
from knora.api import errors
from knora.api.audit import AuditMiddleware
from knora.api.body import install_openapi
from knora.api.body_limit import BodyLimitMiddleware, limits
from knora.api.cors import KnoraCors
from knora.api.docs_pages import install_docs
from knora.api.mcp_server.http import MCP_PATH, McpEndpoint
from knora.api.metrics import MetricsMiddleware
from knora.api.openai import routes as openai_routes
from knora.api.openai.errors import OPENAI_PREFIX, OpenAIErrorsMiddleware
from knora.api.rate_limit import RateLimitMiddleware
from knora.api.request_id import RequestIdMiddleware
from knora.api.routes import (
    accounts,
    agents,
    chat,
    chat_extras,
    chunk_revisions,
    chunks,
    credentials,
    evaluation,
    faq,
    faq_extras,
    feedback,
    initialization,
    kb_copy,
    kb_pins,
    knowledge,
    knowledge_bases,
    knowledge_batch,
    knowledge_move,
    knowledge_views,
    mcp_metadata,
    mcp_services,
    message_search,
    messages,
    metrics,
    model_checks,
    model_usage,
    models,
    ollama,
    parser_engines,
    search,
    sessions,
    settings_checks,
    shares,
    skills,
    storage,
    suggestions,
    system,
    tags,
    tenant_settings,
    tenants,
    unsupported,
    web_search,
)
from knora.ports.telemetry import Metrics, NullMetrics
from knora.root import Services, build_services
from knora.settings import Settings
from knora.web.mount import mount as mount_web

# Mounted under /api/v1, in this order: FastAPI tries routers in order, so the chat router comes first (a chat
# request is matched before the other routers' routes are tried); storage before system, whose
# ``/tenants/kv/{key}`` would otherwise answer ``storage-engine-config``.
ROUTERS: tuple[APIRouter, ...] = (
    chat.router, storage.router,
    settings_checks.router,  # before system.router: /tenants/kv/parser-engine-config
    system.router, initialization.router,
    kb_copy.router,  # before knowledge_bases.router: /knowledge-bases/copy
    knowledge_bases.router,
    knowledge_batch.router,  # before knowledge.router: /knowledge/search, /knowledge/tags
    knowledge_move.router,  # before knowledge.router: /knowledge/move
    knowledge.router, chunks.router, chunk_revisions.router, tags.router,
    model_checks.router,  # before models.router: /models/providers
    model_usage.router,  # before models.router: /models/usage
    models.router, search.router,
    faq_extras.router,  # before faq.router: …/faq/entries/fields, /tags, /export
    faq.router, sessions.router, messages.router, agents.router,
    mcp_services.router, evaluation.router, tenant_settings.router, kb_pins.router,
    # issue 13 item 9: the routes WeKnora's web UI reads on its main pages
    knowledge_views.router, message_search.router, suggestions.router, web_search.router,
    parser_engines.router, unsupported.router,
    feedback.router, credentials.router, ollama.router,  # issue 13: more UI routes
    accounts.router, tenants.router, shares.router,  # issue 14: accounts, tenants, members, keys, shares
    skills.router, mcp_metadata.router, chat_extras.router,  # issue 13 round 3
)

API_PREFIX = "/api/v1"
NULL_METRICS = NullMetrics()


def _metrics_of(app: FastAPI) -> Metrics:
    services: Services | None = getattr(app.state, "services", None)
    return services.telemetry.metrics if services is not None else NULL_METRICS


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    """The app over ``services`` when given (the caller closes them), else over services it builds at start-up
    from ``settings`` and closes at shutdown."""
    settings = settings or (services.settings if services else Settings())

    mcp = McpEndpoint()  # the MCP server over Streamable HTTP (docs/mcp-server.md)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if services is not None:
            async with mcp.running(services):
                yield
            return
        built = await build_services(settings)
        app.state.services = built
        try:
            async with mcp.running(built):
                yield
        finally:
            app.state.draining = True  # readiness answers 503 from here on
            await built.aclose()

    app = FastAPI(title="Knora", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url="/openapi.json", redirect_slashes=True)
    if services is not None:
        app.state.services = services
    errors.install(app)
    # inside CORS and the request id, so a 429 carries both
    app.add_middleware(AuditMiddleware)  # innermost: it sees the route and the caller the request resolved
    app.add_middleware(RateLimitMiddleware, prefix=(API_PREFIX, MCP_PATH, OPENAI_PREFIX))
    app.add_middleware(BodyLimitMiddleware, limit_for=limits(settings.max_upload_bytes,
                                                             settings.max_chat_body_bytes))
    app.add_middleware(OpenAIErrorsMiddleware)  # /v1 errors in OpenAI's shape, 413 and 429 included
    app.add_middleware(KnoraCors, origins=settings.cors_origins, prefix=API_PREFIX)

    app.add_middleware(RequestIdMiddleware)  # error responses get the id too
    # outermost: every answer is counted, a 429 or a 413 included. The metrics object is the services'; the
    # middleware reads it per request, since built services exist only once the lifespan has run.
    app.add_middleware(MetricsMiddleware, metrics=lambda: _metrics_of(app))

    @app.get("/health", include_in_schema=False)
    async def health() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/health/ready", include_in_schema=False)
    async def ready() -> JSONResponse:
        """Readiness: started, not shutting down, and its database (and Redis, when used) answering; 503
        with the reasons otherwise, so a load balancer sends requests to another replica."""
        built: Services | None = getattr(app.state, "services", None)
        if built is None or getattr(app.state, "draining", False):
            reason = "starting" if built is None else "shutting down"
            return JSONResponse({"status": "unavailable", "problems": [reason]}, status_code=503)
        problems = await built.readiness()
        if problems:
            return JSONResponse({"status": "unavailable", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    for router in ROUTERS:
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(metrics.router)
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    app.include_router(openai_routes.router, prefix=OPENAI_PREFIX)  # the OpenAI-compatible API
    install_openapi(app)
    install_docs(app)  # Swagger UI and ReDoc from local assets
    mount_web(app)
    return app
