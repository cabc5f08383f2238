"""PUT /knowledge-bases/:id/pin through the real app (knora.api.routes.kb_pins), on SQLite and PostgreSQL: a
persisted toggle that the knowledge-base answers report as ``is_pinned``/``pinned_at``."""

from __future__ import annotations

import pytest

from knora.root import Services
from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"


class TestPin:
    async def test_toggle_is_kept_and_listed(self, store_container: Services) -> None:
        async with client_for(store_container) as http:
            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]
            other = (await http.post("/api/v1/knowledge-bases", json={"name": "Other"})).json()["data"]["id"]
            r = await http.put(f"/api/v1/knowledge-bases/{kb}/pin")
            assert r.status_code == 200, r.text
            data = r.json()["data"]
            assert data["id"] == kb
            assert data["is_pinned"] is True
            assert data["pinned_at"].endswith("Z")
            got = (await http.get(f"/api/v1/knowledge-bases/{kb}")).json()["data"]
            assert got["is_pinned"] is True
            assert got["pinned_at"] == data["pinned_at"]
            listed = {k["id"]: k for k in (await http.get("/api/v1/knowledge-bases")).json()["data"]}
            assert listed[kb]["is_pinned"] is True
            assert listed[other]["is_pinned"] is False
            assert listed[other]["pinned_at"] is None
            saved = (await http.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "Docs 2"})).json()["data"]
            assert saved["is_pinned"] is True  # a settings save does not unpin it in the answer
            again = (await http.put(f"/api/v1/knowledge-bases/{kb}/pin")).json()["data"]
            assert again["is_pinned"] is False
            assert again["pinned_at"] is None
            assert (await http.get(f"/api/v1/knowledge-bases/{kb}")).json()["data"]["is_pinned"] is False

    async def test_unknown_and_other_tenants_ids_are_404(self, store_container: Services) -> None:
        async with client_for(store_container) as http:
            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]
            assert (await http.put(f"/api/v1/knowledge-bases/{kb}/pin")).status_code == 200
            _err(await http.put(f"/api/v1/knowledge-bases/{MISSING}/pin"), 404)
            _err(await http.put("/api/v1/knowledge-bases/not-an-id/pin"), 404)
        _, key = await store_container.tenants.create("other")
        async with client_for(store_container, **{"X-API-Key": key}) as intruder:
            _err(await intruder.put(f"/api/v1/knowledge-bases/{kb}/pin"), 404)
        async with client_for(store_container) as http:  # the intruder's request toggled nothing
            assert (await http.get(f"/api/v1/knowledge-bases/{kb}")).json()["data"]["is_pinned"] is True

    async def test_a_deleted_knowledge_base_takes_its_pin_along(self, store_container: Services) -> None:
        async with client_for(store_container) as http:
            kb = (await http.post("/api/v1/knowledge-bases", json={"name": "Docs"})).json()["data"]["id"]
            assert (await http.put(f"/api/v1/knowledge-bases/{kb}/pin")).status_code == 200
            assert (await http.delete(f"/api/v1/knowledge-bases/{kb}")).status_code == 200
            assert await store_container.repos.pins.pinned(store_container.default_tenant_id) == {}
