"""Sessions and messages over HTTP on SQLite and PostgreSQL (api §1.5, spec §7)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from knora.domain.common import utcnow
from knora.domain.conversation import Message
from knora.settings import Settings
from tests.conftest import RECORDING, client_for

pytestmark = pytest.mark.integration

API = "/api/v1"


@pytest.fixture
async def container(make_settings: Callable[..., Settings], db_url: str) -> AsyncIterator[Any]:
    """SQLite and PostgreSQL."""
    from tests.conftest import started

    async with started(make_settings(database_url=db_url), RECORDING) as c:
        yield c


@pytest.fixture
async def client(container: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(container) as http:
        yield http


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post(f"{API}/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


class TestSessionsCrud:
    async def test_create_get_update_delete(self, client: httpx.AsyncClient) -> None:
        s = await create(client, title="Hello", description="d", knowledge_base_id="ignored",
                         session_strategy={"x": 1})
        assert s["title"] == "Hello"
        assert s["is_pinned"] is False
        assert s["created_at"].endswith("Z")
        got = (await client.get(f"{API}/sessions/{s['id']}")).json()["data"]
        assert got["id"] == s["id"]
        assert got["description"] == "d"
        upd = (await client.put(f"{API}/sessions/{s['id']}", json={"title": "New"})).json()["data"]
        assert upd["title"] == "New"
        assert upd["description"] == "d"
        r = await client.delete(f"{API}/sessions/{s['id']}")
        assert r.json() == {"success": True, "message": "Session deleted successfully"}
        assert (await client.get(f"{API}/sessions/{s['id']}")).status_code == 404
        assert (await client.delete(f"{API}/sessions/{s['id']}")).status_code == 404

    async def test_list_pages_pins_and_filters(self, client: httpx.AsyncClient) -> None:
        ids = [(await create(client, title=f"chat {i}"))["id"] for i in range(5)]
        await client.post(f"{API}/sessions/{ids[1]}/pin")
        body = (await client.get(f"{API}/sessions?page=1&page_size=2")).json()
        assert body["total"] == 5
        assert body["page"] == 1
        assert body["page_size"] == 2
        assert body["data"][0]["id"] == ids[1]
        assert body["data"][0]["is_pinned"] is True
        page3 = (await client.get(f"{API}/sessions?page=3&page_size=2")).json()["data"]
        assert len(page3) == 1
        found = (await client.get(f"{API}/sessions?keyword=CHAT 3")).json()
        assert [s["id"] for s in found["data"]] == [ids[3]]
        # made with an API key: WeKnora's "api" bucket, not the web UI's sidebar (source=web)
        assert (await client.get(f"{API}/sessions?source=api")).json()["total"] == 5
        assert (await client.get(f"{API}/sessions?source=web")).json()["total"] == 0
        await client.delete(f"{API}/sessions/{ids[1]}/pin")
        assert (await client.get(f"{API}/sessions/{ids[1]}")).json()["data"]["pinned_at"] is None
        for bad in ("page=0", "page_size=0", "page_size=1001", "page=x"):
            assert (await client.get(f"{API}/sessions?{bad}")).status_code == 400

    async def test_batch_delete_and_delete_all(self, client: httpx.AsyncClient) -> None:
        ids = [(await create(client))["id"] for _ in range(3)]
        r = await client.request("DELETE", f"{API}/sessions/batch", json={"ids": ids[:2]})
        assert r.status_code == 200
        assert r.json()["success"]
        assert (await client.get(f"{API}/sessions")).json()["total"] == 1
        assert (await client.request("DELETE", f"{API}/sessions/batch", json={})).status_code == 400
        await client.request("DELETE", f"{API}/sessions/batch", json={"delete_all": True})
        assert (await client.get(f"{API}/sessions")).json()["total"] == 0

    async def test_bad_ids_and_bodies(self, client: httpx.AsyncClient) -> None:
        assert (await client.get(f"{API}/sessions/nope")).status_code == 404
        assert (await client.post(f"{API}/sessions", content=b"{bad")).status_code == 400
        assert (await client.post(f"{API}/sessions", json={"title": 5})).status_code == 400
        s = await create(client)
        assert (await client.put(f"{API}/sessions/{s['id']}", content=b"[1]")).status_code == 400


class TestMessages:
    async def _seed(self, container: Any, sid: str, n: int) -> list[Message]:
        base = utcnow() - timedelta(minutes=10)
        made = []
        for i in range(n):
            at = base + timedelta(seconds=i)
            for role in ("assistant", "user"):  # inserted assistant first: ordering must not depend on it
                m = Message(session_id=sid, tenant_id=container.default_tenant_id, request_id=f"r{i}",
                            role=role,
                            content=f"{role} {i}", is_completed=True, created_at=at, updated_at=at)
                await container.session_service.messages.create(m)
                made.append(m)
        return made

    async def test_load_orders_pairs_and_pages_by_time(self, client: httpx.AsyncClient,
                                                       container: Any) -> None:
        sid = (await create(client))["id"]
        await self._seed(container, sid, 4)
        msgs = (await client.get(f"{API}/messages/{sid}/load?limit=4")).json()["data"]
        assert [m["content"] for m in msgs] == ["user 2", "assistant 2", "user 3", "assistant 3"]
        before = msgs[0]["created_at"]
        older = (await client.get(f"{API}/messages/{sid}/load", params={"limit": 10, "before_time": before}))
        assert [m["content"] for m in older.json()["data"]] == ["user 0", "assistant 0", "user 1",
                                                                "assistant 1"]
        nano = before.replace("Z", "123Z") if "." in before else before.replace("Z", ".000000001Z")
        assert (await client.get(f"{API}/messages/{sid}/load",
                                 params={"before_time": nano})).status_code == 200
        bad = await client.get(f"{API}/messages/{sid}/load", params={"before_time": "yesterday"})
        assert bad.status_code == 400
        assert "RFC3339" in bad.json()["error"]["message"]
        assert len((await client.get(f"{API}/messages/{sid}/load?limit=x")).json()["data"]) == 8

    async def test_delete_one_and_clear(self, client: httpx.AsyncClient, container: Any) -> None:
        sid = (await create(client))["id"]
        made = await self._seed(container, sid, 2)
        r = await client.delete(f"{API}/messages/{sid}/{made[0].id}")
        assert r.status_code == 200
        assert (await client.delete(f"{API}/messages/{sid}/{made[0].id}")).status_code == 404
        assert len((await client.get(f"{API}/messages/{sid}/load")).json()["data"]) == 3
        assert (await client.delete(f"{API}/sessions/{sid}/messages")).status_code == 200
        assert (await client.get(f"{API}/messages/{sid}/load")).json()["data"] == []

    async def test_other_tenants_session_is_404(self, client: httpx.AsyncClient, container: Any) -> None:
        from knora.adapters.db.tables import TenantRow

        async with container.sessions.begin() as s:
            row = TenantRow(name="other")
            s.add(row)
            await s.flush()
            other = int(row.id)
        foreign = await container.session_service.create(other, title="secret")
        assert (await client.get(f"{API}/sessions/{foreign.id}")).status_code == 404
        assert (await client.get(f"{API}/messages/{foreign.id}/load")).status_code == 404
        assert (await client.put(f"{API}/sessions/{foreign.id}", json={"title": "x"})).status_code == 404
        await client.request("DELETE", f"{API}/sessions/batch", json={"ids": [foreign.id]})
        assert await container.session_service.sessions.get(other, foreign.id) is not None
        assert all(s["id"] != foreign.id for s in (await client.get(f"{API}/sessions")).json()["data"])

    async def test_generate_title_endpoint(self, client: httpx.AsyncClient) -> None:
        sid = (await create(client))["id"]
        r = await client.post(f"{API}/sessions/{sid}/generate_title",
                              json={"messages": [{"role": "user", "content": "What is the refund policy for "
                                                                             "annual plans in Europe?"}]})
        title = r.json()["data"]
        assert title.startswith("What is the refund policy")
        assert len(title) <= 31
        assert (await client.get(f"{API}/sessions/{sid}")).json()["data"]["title"] == title
        assert (await client.post(f"{API}/sessions/{sid}/generate_title", json={})).status_code == 400
