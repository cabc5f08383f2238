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

import asyncio
import json
import operator
import re
from itertools import accumulate, count
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from knora.domain.errors import BadRequest, ValidationFailed
from knora.domain.nulls import absent_nulls

M = TypeVar("M", bound=BaseModel)

MAX_JSON_DEPTH = 64

# A JSON string (escapes included), unrolled so that the regex engine never backtracks.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opener adds 2, a closer 0; minus 1 per step
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# Bodies larger than this are parsed in a worker thread (``read_json``): a 20 MB body took seconds of the
# event loop. Smaller ones stay inline, where they cost less than the hand-off.
OFFLOAD_BYTES = 256 * 1024
YIELD_BYTES = 1 << 18  # bytes of body scanned per C call in a worker thread
YIELD_BRACKETS = 1 << 16  # brackets summed per C call in a worker thread
_RUN = re.compile(rb'(?:[^"]*' + _STRING.pattern + rb")+", re.DOTALL)
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)

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


def _deeper(brackets: bytes, limit: int, size: int) -> bool:
    """The running sum of ``too_deep`` over ``brackets`` (only ``[]{}``), ``size`` brackets per C call."""
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    steps = brackets.translate(_STEP)
    depth = 0  # the running sum so far; an opener adds 2, a closer 0, minus 1 for each bracket
    for at in range(0, len(steps), size):
        sums = list(accumulate(steps[at:at + size], initial=depth))
        if max(map(operator.sub, sums[1:], count(at + 1))) > limit:
            return True
        depth = sums[-1]
    return False


def too_deep_yielding(raw: bytes, limit: int = MAX_JSON_DEPTH, window: int = YIELD_BYTES) -> bool:
    """``too_deep`` in bounded C calls, for a worker thread: a C call never lets go of the GIL, so one regex
    over 20 MB kept the event loop's thread waiting for all of it. Strings are cut out ``window`` bytes at a
    time — whole strings where they fit, a longer one skipped in steps — and the depth is summed
    ``YIELD_BRACKETS`` at a time; between the calls the interpreter may switch to the loop's thread."""
    parts: list[bytes] = []
    pos, n = 0, len(raw)
    while pos < n:
        end = min(pos + window, n)
        run = _RUN.match(raw, pos, end)  # text and complete strings within the window
        if run is not None:
            parts.append(_STRING.sub(b"", raw[pos:run.end()]).translate(None, _NOT_BRACKETS))
            pos = run.end()
            continue
        quote = raw.find(b'"', pos, end)
        if quote < 0:
            parts.append(raw[pos:end].translate(None, _NOT_BRACKETS))
            pos = end
            continue
        parts.append(raw[pos:quote].translate(None, _NOT_BRACKETS))
        inside = _skip_string(raw, quote + 1, window)
        if inside is None:  # unterminated: kept whole, as too_deep keeps it (it can only overstate)
            parts.append(raw[quote:].translate(None, _NOT_BRACKETS))
            break
        pos = inside
    return _deeper(b"".join(parts), limit, YIELD_BRACKETS)


def _skip_string(raw: bytes, pos: int, window: int) -> int | None:
    """Where the string whose body starts at ``pos`` ends (after its closing quote), ``window`` bytes per
    step; None if it never does. A step stops before an escape it cannot finish, and the next begins there."""
    while pos < len(raw):
        body = _STRING_BODY.match(raw, pos, min(pos + window, len(raw)))
        assert body is not None  # the pattern matches the empty string
        if body.end() < len(raw) and raw[body.end()] == 0x22:  # the closing quote
            return body.end() + 1
        if body.end() == pos:  # (window >= 2) a backslash ending the input: no quote can close the string
            return None
        pos = body.end()
    return None


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


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Each object of a body parsed in a worker thread goes through Python here: json.loads is one C call
    that never lets go of the GIL, and this is where the interpreter may switch to the event loop."""
    return dict(pairs)


def parse_json(raw: bytes | str, *, yielding: bool = False) -> Any:
    """``raw`` as JSON, or a 400: too deep, malformed, not UTF-8, ``NaN``, or a lone surrogate.

    A syntax error names its position in ``details`` as FastAPI's body parsing does: the answer the routes
    gave when FastAPI parsed their bodies, kept so that clients see no change. ``yielding``: in a worker
    thread, do the work in steps that let the event loop's thread run in between (same answer, slower)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if (too_deep_yielding if yielding else too_deep)(data):
        raise BadRequest(f"JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    try:
        value = json.loads(data, parse_constant=_not_json_constant,
                           object_pairs_hook=_object if yielding else None)
    except json.JSONDecodeError as exc:
        raise BadRequest("Malformed JSON body",
                         details=[{"loc": ["body", exc.pos], "msg": "JSON decode error"}]) from exc
    except (ValueError, RecursionError) as exc:  # not UTF-8, NaN/Infinity; RecursionError: belt and braces
        raise BadRequest("Malformed JSON body") from exc
    if _SURROGATE_ESCAPE.search(data) and not _encodable(value):
        raise BadRequest("Malformed JSON body: a string holds a lone UTF-16 surrogate")
    return value


async def parse_json_off_loop(raw: bytes) -> Any:
    """``parse_json``, in a worker thread above ``OFFLOAD_BYTES`` so that other requests go on meanwhile."""
    if len(raw) <= OFFLOAD_BYTES:
        return parse_json(raw)
    return await asyncio.to_thread(parse_json, raw, yielding=True)


async def read_json(request: Request) -> Any:
    """The raw body (also for GET-with-body) parsed by ``parse_json``; None if it is empty."""
    raw = await request.body()
    return await parse_json_off_loop(raw) if raw.strip() else None


async def read_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an empty body is {}."""
    data = await read_json(request)
    return {} if data is None else as_object(data)


def parse(model: type[M], data: dict[str, Any]) -> M:
    """``data`` validated as ``model``; a failure is a 400 ValidationFailed listing ``field: reason``.
    ``null`` for a list or object field is taken as absent first (``knora.domain.nulls``), as WeKnora's Go
    handlers take it."""
    try:
        return model.model_validate(absent_nulls(model, data))
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValidationFailed(msg or "Invalid request") from exc


async def read_body(request: Request, model: type[M]) -> M:
    """The request's JSON object body as ``model`` — the one way a route reads a body."""
    return parse(model, await read_object(request))


def text_field(value: object, name: str, *, required: bool = False) -> str:
    """A body's string field, stripped: absent (``None``) is ``""`` unless ``required``; another type is a
    400 naming the field."""
    if required and (value is None or (isinstance(value, str) and not value.strip())):
        raise BadRequest(f"{name} is required")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string")
    return value.strip()


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
