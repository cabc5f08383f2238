"""The error answer every API test checks: the status, and WeKnora's envelope with an integer code and a
message (``{"success": false, "error": {"code", "message"}}``)."""

from __future__ import annotations

from typing import Any

import httpx


def envelope_error(r: httpx.Response, status: int) -> dict[str, Any]:
    """The body of ``r``, asserted to be the error envelope with ``status``."""
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert body["success"] is False
    assert isinstance(body["error"]["code"], int)
    assert body["error"]["message"]
    return body
