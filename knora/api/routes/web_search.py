"""Web search providers (WeKnora's ``RegisterWebSearch*Routes``): the provider catalogue, CRUD on a tenant's
providers, the write-only API key subresource, and connection tests. The behaviour is in
``knora.services.websearch.providers``; the tenant's default provider is the one its chat turns search
with."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import TenantDep, WebSearchProvidersDep
from knora.api.envelope import ok
from knora.domain.errors import NotFound, ValidationFailed
from knora.services.websearch.providers import TYPES, provider_json

router = APIRouter(tags=["web-search"])


@router.get("/web-search/providers")
async def provider_catalogue(_tenant_id: TenantDep) -> JSONResponse:
    return ok([t.as_json() for t in TYPES.values()])


@router.get("/web-search-providers/types")
async def provider_types(_tenant_id: TenantDep) -> JSONResponse:
    return ok([t.as_json() for t in TYPES.values()])


@router.post("/web-search-providers/test")
async def test_raw(request: Request, providers: WebSearchProvidersDep, tenant_id: TenantDep) -> JSONResponse:
    """Tests a provider from the form before it is saved (nothing is stored)."""
    draft = providers.draft(tenant_id, await read_object(request))
    count = await providers.test(draft)
    return ok({"ok": True, "result_count": count}, message="Connection successful")


@router.get("/web-search-providers")
async def list_providers(providers: WebSearchProvidersDep, tenant_id: TenantDep) -> JSONResponse:
    return ok([provider_json(p) for p in await providers.list(tenant_id)])


@router.post("/web-search-providers", status_code=201)
async def create_provider(request: Request, providers: WebSearchProvidersDep,
                          tenant_id: TenantDep) -> JSONResponse:
    created = await providers.create(tenant_id, await read_object(request))
    return ok(provider_json(created), status=201)


@router.get("/web-search-providers/{provider_id}")
async def get_provider(provider_id: str, providers: WebSearchProvidersDep,
                       tenant_id: TenantDep) -> JSONResponse:
    return ok(provider_json(await providers.get(tenant_id, provider_id)))


@router.put("/web-search-providers/{provider_id}")
async def update_provider(provider_id: str, request: Request, providers: WebSearchProvidersDep,
                          tenant_id: TenantDep) -> JSONResponse:
    await providers.get(tenant_id, provider_id)  # an unknown id is a 404 before the body is looked at
    updated = await providers.update(tenant_id, provider_id, await read_object(request))
    return ok(provider_json(updated))


@router.delete("/web-search-providers/{provider_id}")
async def delete_provider(provider_id: str, providers: WebSearchProvidersDep,
                          tenant_id: TenantDep) -> JSONResponse:
    await providers.delete(tenant_id, provider_id)
    return ok(message="Web search provider deleted")


def _fields(configured: bool) -> dict[str, dict[str, dict[str, bool]]]:
    return {"fields": {"api_key": {"configured": configured}}}


@router.put("/web-search-providers/{provider_id}/credentials")
async def put_credentials(provider_id: str, request: Request, providers: WebSearchProvidersDep,
                          tenant_id: TenantDep) -> JSONResponse:
    await providers.get(tenant_id, provider_id)
    key = (await read_object(request)).get("api_key")
    if not isinstance(key, str) or not key.strip():
        raise ValidationFailed("api_key: a non-empty string is required")
    updated = await providers.set_api_key(tenant_id, provider_id, key.strip())
    return ok(_fields(bool(updated.api_key)))


@router.delete("/web-search-providers/{provider_id}/credentials/{field}")
async def delete_credential(provider_id: str, field: str, providers: WebSearchProvidersDep,
                            tenant_id: TenantDep) -> JSONResponse:
    if field != "api_key":
        raise NotFound(f"Unknown credential field {field!r}")
    updated = await providers.set_api_key(tenant_id, provider_id, None)
    return ok(_fields(bool(updated.api_key)))


@router.post("/web-search-providers/{provider_id}/test")
async def test_saved(provider_id: str, providers: WebSearchProvidersDep,
                     tenant_id: TenantDep) -> JSONResponse:
    count = await providers.test(await providers.get(tenant_id, provider_id))
    return ok({"ok": True, "result_count": count}, message="Connection successful")
