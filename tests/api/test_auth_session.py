"""``POST /auth/logout`` and ``GET /auth/validate`` as WeKnora's web UI calls them (with its bearer token),
through the real app on SQLite."""

from __future__ import annotations

import pytest

from knora.root import Services
from tests.conftest import TEST_API_KEY, client_for

pytestmark = pytest.mark.integration

BROWSER = {"X-API-Key": "", "Authorization": f"Bearer {TEST_API_KEY}"}


async def test_validate_and_logout_with_the_ui_token(sqlite_container: Services) -> None:
    async with client_for(sqlite_container, **BROWSER) as http:
        r = await http.get("/api/v1/auth/validate")
        assert r.status_code == 200, r.text
        assert r.json() == {"success": True, "valid": True, "message": "Token is valid"}
        out = await http.post("/api/v1/auth/logout", json={})
        assert out.status_code == 200, out.text
        assert out.json()["success"] is True
        # Knora's credential is the key: nothing was revoked, the next request still passes
        assert (await http.get("/api/v1/auth/validate")).status_code == 200


async def test_a_bad_token_is_not_valid(sqlite_container: Services) -> None:
    async with client_for(sqlite_container, **{"X-API-Key": "", "Authorization": "Bearer not-a-key"}) as http:
        r = await http.get("/api/v1/auth/validate")
        assert r.status_code == 401
        assert r.json()["success"] is False
        assert (await http.post("/api/v1/auth/logout", json={})).status_code == 401
