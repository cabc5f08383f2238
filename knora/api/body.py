"""Reading JSON object bodies the same way in every router: empty → {}, malformed or not an object → 400."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from knora.domain.errors import BadRequest


def as_object(body: Any) -> dict[str, Any]:
    """A parsed body that must be a JSON object."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object")
    return body


async def read_object(request: Request) -> dict[str, Any]:
    """The raw body (also for GET-with-body) parsed as a JSON object; an empty body is {}."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadRequest("Malformed JSON body") from exc
    return as_object(data)
