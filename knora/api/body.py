"""Reading JSON object bodies the same way in every router: empty → {}, malformed or not an object → 400.

A route reads its body with ``read_body(request, Model)`` (or ``read_object``/``read_json`` for a body
without a model) and names that model in its decorator with
``openapi_extra=request_body(Model)``. The body is read by hand rather than as a FastAPI body parameter so
that every failure keeps the messages WeKnora clients (and our tests) rely on — FastAPI's own 422 errors do
not. The OpenAPI document still names the model: ``install_openapi`` adds every model given to
``request_body`` to the document's components.

Every body is hostile until parsed: its nesting depth is measured on the raw bytes before ``json.loads`` sees
it (Python's parser, and pydantic after it, recurse per level: 100,000 ``[`` raised RecursionError, a 500),
``NaN``/``Infinity`` are refused (not JSON, and an answer echoing them cannot be encoded) and so are lone
surrogates (``"\ud800"`` decodes, then fails to encode for the database or the answer). How many bytes a
body may have is checked while it arrives, by ``knora.api.body_limit``.
"""

from __future__ import annotations

import json
import operator
import re
from itertools import accumulate, count
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from knora.domain.errors import BadRequest, ValidationFailed

M = TypeVar("M", bound=BaseModel)

MAX_JSON_DEPTH = 64

# A JSON string (escapes included), unrolled so that the regex engine never backtracks.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opener adds 2, a closer 0; minus 1 per step
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# Models named by ``request_body`` (by OpenAPI component name); filled at import time of the routers.
_DOCUMENTED: dict[str, type[BaseModel]] = {}


def as_object(body: Any) -> dict[str, Any]:
    """A parsed body that must be a JSON object."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object")
    return body


def too_deep(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if arrays and objects in ``raw`` nest deeper than ``limit``, found without parsing: strings are
    cut out by one regex, everything but brackets is dropped, and the depth is a running sum, all in C
    (about 60 ms per MB of brackets). Malformed input (an unterminated string) can only overstate the depth
    of a body the parser would refuse anyway."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    deepest: int = max(map(operator.sub, accumulate(brackets.translate(_STEP)), count(1)))
    return deepest > limit


def _not_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _encodable(value: Any) -> bool:
    """False if a string anywhere in ``value`` holds a lone surrogate (depth is already bounded)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodable(v) for v in value)
    return True


def parse_json(raw: bytes | str) -> Any:
    """``raw`` as JSON, or a 400: too deep, malformed, not UTF-8, ``NaN``, or a lone surrogate.

    A syntax error names its position in ``details`` as FastAPI's body parsing does: the answer the routes
    gave when FastAPI parsed their bodies, kept so that clients see no change."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if too_deep(data):
        raise BadRequest(f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    try:
        value = json.loads(data, parse_constant=_not_json_constant)
    except json.JSONDecodeError as exc:
        raise BadRequest("Malformed JSON body",
                         details=[{"loc": ["body", exc.pos], "msg": "JSON decode error"}]) from exc
    except (ValueError, RecursionError) as exc:  # not UTF-8, NaN/Infinity; RecursionError: belt and braces
        raise BadRequest("Malformed JSON body") from exc
    if _SURROGATE_ESCAPE.search(data) and not _encodable(value):
        raise BadRequest("Malformed JSON body: a string holds a lone UTF-16 surrogate")
    return value


async def read_json(request: Request) -> Any:
    """The raw body (also for GET-with-body) parsed by ``parse_json``; None if it is empty."""
    raw = await request.body()
    return parse_json(raw) if raw.strip() else None


async def read_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an empty body is {}."""
    data = await read_json(request)
    return {} if data is None else as_object(data)


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
