"""System info, capabilities and the tenant's settings reads (api §1.5, §6(c)). Logging in is
``knora.api.routes.accounts``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from knora import __version__
from knora.api.deps import SettingsDep, TenantDep, TenantsDep
from knora.api.envelope import ok
from knora.domain.errors import NotFound

router = APIRouter(tags=["system"])

# Every key of WeKnora's DeploymentCapabilityKeys is answered: the UI shows a menu whose key is missing. A
# feature is "supported" only when its routes answer for real (``settings.websearch``:
# knora.api.routes.web_search); the unsupported ones answer their reads empty (knora.api.routes.unsupported).
_UNSUPPORTED = ("organizations", "integrations.im", "integrations.embed", "settings.vectorstore",
                "settings.sandbox", "settings.sandbox.docker", "sandbox.workbench")
_SUPPORTED = ("agents", "integrations.api", "settings.mcp", "settings.websearch",
              "settings.storage")  # one backend, KNORA_BLOB_STORE's (knora.api.routes.storage)


@router.get("/system/info")
async def system_info(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    engine = settings.effective_retrieval_engine
    return ok({"version": __version__, "edition": "knora", "commit_id": "", "build_time": "",
               "go_version": "",
               "keyword_index_engine": engine, "vector_store_engine": engine, "graph_database_engine": "",
               # WeKnora: a self-hosted S3-compatible object store (its "minio") is configured
               "minio_enabled": settings.blob_store == "s3" and bool(settings.s3_endpoint_url),
               "db_version": "sqlite" if settings.is_sqlite else "postgres",
               "embedder": settings.embedder, "job_queue": settings.job_queue,
               "blob_store": settings.blob_store})


@router.get("/system/capabilities")
async def system_capabilities(_tenant_id: TenantDep) -> JSONResponse:
    caps = {k: {"supported": False, "reason": "not available in Knora"} for k in _UNSUPPORTED}
    caps.update({k: {"supported": True} for k in _SUPPORTED})
    return ok({"edition": "lite", "capabilities": caps})


@router.get("/tenants/kv/{key}")
async def tenant_kv(key: str, tenants: TenantsDep, tenant_id: TenantDep) -> JSONResponse:
    t = await tenants.get(tenant_id)
    if key == "retrieval-config":
        return ok(t.retrieval_config if t else {})
    if key in ("web-search-config", "prompt-templates"):
        return ok({})
    raise NotFound(f"Unknown setting {key!r}")
