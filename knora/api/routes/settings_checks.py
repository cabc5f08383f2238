"""The settings page's parser and storage checks: ``GET``/``PUT /tenants/kv/parser-engine-config``,
``POST /system/parser-engines/check``, ``POST /system/storage-engine-check`` and
``POST /storage-backends/test``, ``/storage-backends/:id/test``.

The parser check answers the list of ``GET /system/parser-engines`` (Knora's parser registry; no setting
changes it, ``knora.services.kb.parser_config``). The storage checks write, read back and remove a probe blob
through Knora's one store (``knora.services.kb.storage.check_local``); another provider is a 400, another
backend id a 404. Mounted before the system router, whose ``/tenants/kv/{key}`` would take the setting.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import BlobsDep, ServicesDep, SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.api.routes.parser_engines import list_parser_engines
from knora.domain.errors import NotFound
from knora.services.kb import storage
from knora.services.kb.parser_config import check_parser_engine_config, parser_engine_config

router = APIRouter(tags=["system"])


@router.get("/tenants/kv/parser-engine-config")
async def get_parser_engine_config(_tenant_id: TenantDep) -> JSONResponse:
    return ok(parser_engine_config())


@router.put("/tenants/kv/parser-engine-config")
async def put_parser_engine_config(request: Request, _tenant_id: TenantDep) -> JSONResponse:
    return ok(check_parser_engine_config(await read_object(request)),
              message="Parser engine configuration updated")


@router.post("/system/parser-engines/check")
async def check_parser_engines(request: Request, s: ServicesDep, tenant_id: TenantDep) -> JSONResponse:
    check_parser_engine_config(await read_object(request))  # a config naming an engine Knora lacks: 400
    return await list_parser_engines(s, tenant_id)


@router.post("/system/storage-engine-check")
@router.post("/system/storage-engines/check")
async def check_storage_engine(request: Request, blobs: BlobsDep, settings: SettingsDep,
                               _tenant_id: TenantDep) -> JSONResponse:
    view = storage.view_of(settings)
    storage.check_provider(await read_object(request), view)
    return ok(await storage.check_local(blobs, view))


@router.post("/storage-backends/test")
async def check_storage_backend(request: Request, blobs: BlobsDep, settings: SettingsDep,
                                _tenant_id: TenantDep) -> JSONResponse:
    view = storage.view_of(settings)
    storage.check_provider(await read_object(request), view)
    return ok(await storage.check_local(blobs, view))


@router.post("/storage-backends/{backend_id}/test")
async def check_saved_storage_backend(backend_id: str, blobs: BlobsDep, settings: SettingsDep,
                                      _tenant_id: TenantDep) -> JSONResponse:
    view = storage.view_of(settings)
    if backend_id != view.backend_id:
        raise NotFound("storage backend not found")
    return ok(await storage.check_local(blobs, view))
