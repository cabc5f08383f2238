"""Storage, as WeKnora's web UI asks about it (issue 13 item 1): ``/storage-backends``,
``/system/storage-engine-status`` and the tenant setting ``storage-engine-config``.

Knora stores originals in one place, the blob store ``KNORA_BLOB_STORE`` chose (local, s3 or postgres); these
routes say which in WeKnora's shapes, and refuse to create or configure storage Knora does not have
(``knora.services.kb.storage``). Mounted before the
system router, so ``/tenants/kv/storage-engine-config`` is answered here rather than by its ``{key}`` route.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_body, request_body
from knora.api.deps import SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.schemas.initialization import StorageEngineConfigRequest
from knora.domain.errors import BadRequest, NotFound
from knora.services.kb import storage

router = APIRouter(tags=["storage"])

_ONE_BACKEND = ("Knora has one storage backend, the blob store its settings choose (KNORA_BLOB_STORE); "
                "others cannot be added or changed")


@router.get("/storage-backends")
async def list_backends(settings: SettingsDep, tenant_id: TenantDep) -> JSONResponse:
    view = storage.view_of(settings)
    return ok([storage.local_backend(tenant_id, view).model_dump()],
              default_storage_backend_id=view.backend_id)


@router.get("/storage-backends/types")
async def backend_types(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    return ok(list(storage.view_of(settings).providers))


@router.get("/storage-backends/{backend_id}")
async def get_backend(backend_id: str, settings: SettingsDep, tenant_id: TenantDep) -> JSONResponse:
    view = storage.view_of(settings)
    if backend_id != view.backend_id:
        raise NotFound("storage backend not found")
    return ok(storage.local_backend(tenant_id, view).model_dump())


@router.post("/storage-backends")
@router.put("/storage-backends/{backend_id}")
@router.delete("/storage-backends/{backend_id}")
@router.put("/storage-backends/{backend_id}/default")
async def change_backend(_tenant_id: TenantDep) -> JSONResponse:
    raise BadRequest(_ONE_BACKEND)


@router.get("/system/storage-engine-status")
async def engine_status(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    return ok(storage.engine_status(storage.view_of(settings)))


@router.get("/tenants/kv/storage-engine-config")
async def get_engine_config(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    return ok(storage.engine_config(storage.view_of(settings)))


@router.put("/tenants/kv/storage-engine-config", openapi_extra=request_body(StorageEngineConfigRequest))
async def put_engine_config(request: Request, settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    body = await read_body(request, StorageEngineConfigRequest)
    return ok(storage.check_engine_config(body.sent(), storage.view_of(settings)),
              message="Storage engine configuration updated")
