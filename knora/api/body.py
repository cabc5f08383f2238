"""Reading JSON object bodies the same way in every router: empty → {}, malformed or not an object → 400.

A route reads its body with ``read_body(request, Model)`` and names that model in its decorator with
``openapi_extra=request_body(Model)``. The body is read by hand rather than as a FastAPI body parameter so
that every failure keeps the messages WeKnora clients (and our tests) rely on — FastAPI's own 422 errors do
not. The OpenAPI document still names the model: ``install_openapi`` adds every model given to
``request_body`` to the document's components.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from knora.domain.errors import BadRequest, ValidationFailed

M = TypeVar("M", bound=BaseModel)

# Models named by ``request_body`` (by OpenAPI component name); filled at import time of the routers.
_DOCUMENTED: dict[str, type[BaseModel]] = {}


def as_object(body: Any) -> dict[str, Any]:
    """A parsed body that must be a JSON object."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object")
    return body


async def read_object(request: Request) -> dict[str, Any]:
    """The raw body (also for GET-with-body) parsed as a JSON object; an empty body is {}.

    A syntax error names its position in ``details`` as FastAPI's body parsing does: the answer the routes
    gave when FastAPI parsed their bodies, kept so that clients see no change."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadRequest("Malformed JSON body",
                         details=[{"loc": ["body", exc.pos], "msg": "JSON decode error"}]) from exc
    except ValueError as exc:  # not UTF-8
        raise BadRequest("Malformed JSON body") from exc
    return as_object(data)


def parse(model: type[M], data: dict[str, Any]) -> M:
    """``data`` validated as ``model``; a failure is a 400 ValidationFailed listing ``field: reason``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValidationFailed(msg or "Invalid request") from exc


async def read_body(request: Request, model: type[M]) -> M:
    """The request's JSON object body as ``model`` — the one way a route reads a body."""
    return parse(model, await read_object(request))


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads its body with ``read_body(request, model)``."""
    _DOCUMENTED[model.__name__] = model
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": ref}}}}


def install_openapi(app: FastAPI) -> None:
    """Adds the models named by ``request_body`` to the app's OpenAPI components (FastAPI only knows the
    models of the parameters it parses itself)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        if _DOCUMENTED:
            _, defs = models_json_schema([(m, "validation") for m in _DOCUMENTED.values()],
                                         ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in defs.get("$defs", {}).items():
                components.setdefault(name, definition)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
