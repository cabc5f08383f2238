"""The chat page's artifact and steer reads through the real app on SQLite: WeKnora's empty answers, for the
caller's sessions only."""

from __future__ import annotations

import pytest

from knora.domain.conversation import Message
from knora.root import Services
from tests.conftest import client_for

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"


async def test_empty_reads_for_own_sessions_404_otherwise(sqlite_container: Services) -> None:
    s = await sqlite_container.session_service.create(1, title="Tea")
    user = Message(session_id=s.id, tenant_id=1, request_id="r1", role="user", content="Tea?",
                   is_completed=True)
    answer = Message(session_id=s.id, tenant_id=1, request_id="r1", role="assistant", content="Yes.",
                     is_completed=True)
    await sqlite_container.session_service.messages.create_pair(user, answer)
    other_session = await sqlite_container.session_service.create(1, title="Other")
    base = f"/api/v1/sessions/{s.id}"
    _, key = await sqlite_container.tenants.create("other")
    async with client_for(sqlite_container) as http, \
            client_for(sqlite_container, **{"X-API-Key": key}) as other:
        assert (await http.get(f"{base}/artifacts")).json() == {"success": True, "data": []}
        got = await http.get(f"{base}/messages/{answer.id}/artifacts")
        assert got.json() == {"success": True, "data": []}
        assert (await http.get(f"{base}/steer")).json() == {"success": True, "items": []}

        for path in (f"/api/v1/sessions/{MISSING}/artifacts", "/api/v1/sessions/nope/steer",
                     f"{base}/messages/{MISSING}/artifacts", f"{base}/messages/nope/artifacts",
                     f"/api/v1/sessions/{other_session.id}/messages/{answer.id}/artifacts"):
            r = await http.get(path)
            assert r.status_code == 404, (path, r.text)
            assert r.json()["success"] is False
        for path in (f"{base}/artifacts", f"{base}/messages/{answer.id}/artifacts", f"{base}/steer"):
            assert (await other.get(path)).status_code == 404, path
        # the writes stay unrouted
        assert (await http.post(f"{base}/steer", json={"query": "more"})).status_code in (404, 405)
