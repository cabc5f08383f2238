"""Write-only credentials of model rows and MCP services: ``PUT /models/:id/credentials``,
``DELETE /models/:id/credentials/:field``, ``PUT /mcp-services/:id/credentials``,
``DELETE /mcp-services/:id/credentials/:field`` (WeKnora's credential subresource).

A secret is set or cleared without resending the row; it is never answered: the answer is
``{fields: {<field>: {configured}}}``, and the row's own answers carry the same map as ``credentials``.
A model row has one secret, ``api_key`` (WeKnora's ``app_secret`` belongs to its WeKnoraCloud provider,
which Knora has not); an MCP service has ``api_key`` and ``token`` (sent as ``X-API-Key`` and
``Authorization: Bearer``).
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.api.body import read_object
from knora.api.deps import MCPServicesDep, ModelServiceDep, TenantDep
from knora.api.envelope import ok
from knora.api.serializers import require_id
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.domain.models import BUILTIN_CHAT_MODEL_ID
from knora.services.agent.mcp_services import CREDENTIAL_FIELDS, credentials
from knora.services.ingest.embedders import BUILTIN_EMBEDDING_MODEL_ID

router = APIRouter(tags=["credentials"])

MODEL_FIELDS = ("api_key",)
_BUILTIN_MODELS = (BUILTIN_CHAT_MODEL_ID, BUILTIN_EMBEDDING_MODEL_ID)


def _secrets(body: dict[str, object], fields: Sequence[str]) -> dict[str, str]:
    """The secrets a PUT body sets: at least one of ``fields``, each a non-empty string; no other key."""
    unknown = sorted(k for k in body if k not in fields)
    if unknown:
        raise ValidationFailed(f"unknown credential field {unknown[0]!r}; one of {', '.join(fields)}")
    out: dict[str, str] = {}
    for field, value in body.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ValidationFailed(f"{field}: a non-empty string is required")
        out[field] = value.strip()
    if not out:
        raise ValidationFailed(f"one of {', '.join(fields)} is required")
    return out


def _fields(configured: dict[str, bool]) -> dict[str, dict[str, dict[str, bool]]]:
    return {"fields": {k: {"configured": v} for k, v in configured.items()}}


def _model_id(model_id: str) -> str:
    if model_id in _BUILTIN_MODELS:
        raise BadRequest("Built-in models are configured through Knora's settings")
    return require_id(model_id, "Model")


@router.put("/models/{model_id}/credentials")
async def put_model_credentials(model_id: str, request: Request, model_service: ModelServiceDep,
                                tenant_id: TenantDep) -> JSONResponse:
    await model_service.get(tenant_id, _model_id(model_id))  # 404 before the body is looked at
    secrets = _secrets(await read_object(request), MODEL_FIELDS)
    m = await model_service.update(tenant_id, model_id, {"parameters": secrets})
    return ok(_fields({"api_key": bool(m.api_key)}), message="Credentials updated")


@router.delete("/models/{model_id}/credentials/{field}")
async def delete_model_credential(model_id: str, field: str, model_service: ModelServiceDep,
                                  tenant_id: TenantDep) -> JSONResponse:
    await model_service.get(tenant_id, _model_id(model_id))
    if field not in MODEL_FIELDS:
        raise NotFound(f"Unknown credential field {field!r}")
    m = await model_service.update(tenant_id, model_id, {"parameters": {field: ""}})
    return ok(_fields({"api_key": bool(m.api_key)}), message="Credential cleared")


@router.put("/mcp-services/{service_id}/credentials")
async def put_mcp_credentials(service_id: str, request: Request, mcp_services: MCPServicesDep,
                              tenant_id: TenantDep) -> JSONResponse:
    service = await mcp_services.get(tenant_id, service_id)
    for field, value in _secrets(await read_object(request), CREDENTIAL_FIELDS).items():
        service = await mcp_services.set_credential(tenant_id, service_id, field, value)
    return ok(_fields({k: v["configured"] for k, v in credentials(service).items()}),
              message="Credentials updated")


@router.delete("/mcp-services/{service_id}/credentials/{field}")
async def delete_mcp_credential(service_id: str, field: str, mcp_services: MCPServicesDep,
                                tenant_id: TenantDep) -> JSONResponse:
    service = await mcp_services.set_credential(tenant_id, service_id, field, None)
    return ok(_fields({k: v["configured"] for k, v in credentials(service).items()}),
              message="Credential cleared")
