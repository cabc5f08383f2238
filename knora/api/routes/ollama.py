"""WeKnora's Ollama routes of the model settings page: ``GET /initialization/ollama/status``,
``GET /initialization/ollama/models``, ``POST /initialization/ollama/models/check``, and the download routes.

Status, list and check ask the configured Ollama server for real (``knora.services.kb.ollama``: a short
timeout, the operator outbound policy). A server that cannot be reached is WeKnora's "not available" answer
(``available: false`` with the reason, no models, every model ``false``), never a 5xx. Knora does not pull
model weights: a download of a model the server already has is WeKnora's "already there" answer
(``status: completed``); any other is a 400 that says to run ``ollama pull`` on the Ollama host. No download
task ever exists, so the task list is empty and a task's progress is a 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from knora.adapters.llm.ollama_api import OllamaUnavailable, installed
from knora.api.body import read_object
from knora.api.deps import SettingsDep, TenantDep
from knora.api.envelope import ok
from knora.domain.errors import BadRequest, NotFound, ValidationFailed
from knora.services.kb.ollama import ollama_api

router = APIRouter(tags=["initialization"])


@router.get("/initialization/ollama/status")
async def ollama_status(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    api = ollama_api(settings)
    try:
        version = await api.version()
    except OllamaUnavailable as exc:
        return ok({"available": False, "error": str(exc), "baseUrl": api.base_url})
    return ok({"available": True, "version": version, "baseUrl": api.base_url})


@router.get("/initialization/ollama/models")
async def ollama_models(settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    api = ollama_api(settings)
    try:
        models = await api.models()
    except OllamaUnavailable as exc:
        return ok({"models": [], "available": False, "error": str(exc)})
    return ok({"models": [{"name": m.name, "size": m.size, "digest": m.digest, "modified_at": m.modified_at}
                          for m in models]})


def _names(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationFailed("models: a list of model names is required")
    return [str(v) for v in value]


@router.post("/initialization/ollama/models/check")
async def check_ollama_models(request: Request, settings: SettingsDep, _tenant_id: TenantDep) -> JSONResponse:
    names = _names((await read_object(request)).get("models"))
    try:
        models = await ollama_api(settings).models()
    except OllamaUnavailable:
        models = []  # WeKnora: a model it could not check is not available
    return ok({"models": {name: installed(name, models) for name in names}})


@router.post("/initialization/ollama/models/download")
async def download_ollama_model(request: Request, settings: SettingsDep,
                                _tenant_id: TenantDep) -> JSONResponse:
    name = (await read_object(request)).get("modelName")
    if not isinstance(name, str) or not name.strip():
        raise ValidationFailed("modelName is required")
    name = name.strip()
    api = ollama_api(settings)
    try:
        models = await api.models()
    except OllamaUnavailable as exc:
        raise BadRequest(f"Ollama is not available: {exc}") from exc
    if installed(name, models):
        return ok({"modelName": name, "status": "completed", "progress": 100.0},
                  message="Model already exists")
    raise BadRequest(f"Knora does not download models: run `ollama pull {name}` on the Ollama host "
                     f"({api.base_url}), then check again")


@router.get("/initialization/ollama/download/tasks")
async def download_tasks(_tenant_id: TenantDep) -> JSONResponse:
    return ok([])


@router.get("/initialization/ollama/download/progress/{task_id}")
async def download_progress(task_id: str, _tenant_id: TenantDep) -> JSONResponse:
    raise NotFound("download task not found: Knora does not download models")
