"""``PUT /tenants/kv/retrieval-config``: the settings page's retrieval knobs (the GET is in
``knora.api.routes.system``). Validation: ``knora.services.tenants.retrieval_settings``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import ServicesDep, TenantDep
from knora.api.envelope import ok
from knora.domain.errors import NotFound
from knora.services.tenants.retrieval_settings import validated

router = APIRouter(tags=["system"])


@router.put("/tenants/kv/retrieval-config")
async def put_retrieval_config(request: Request, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    changes = await validated(tenant_id, await read_object(request), s.repos.models)
    tenant = await s.tenants.get(tenant_id)
    if tenant is None:
        raise NotFound("Tenant not found")
    config = {**tenant.retrieval_config, **changes}
    await s.tenants.set_retrieval_config(tenant_id, config)
    return ok(config, message="Retrieval config updated")
