"""Chunk revisions through the real app (knora.api.routes.chunk_revisions, ``PUT /chunks/:kid/:id``), on
SQLite and PostgreSQL: each content edit keeps the content it replaces, a revert makes it current again
(re-indexed: the real search route finds it), and a stale ``expected_revision`` is a 409."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.api.test_kb_copy import MISSING, TEXT, _err, _hits, _kb, _manual
from tests.conftest import client_for

pytestmark = pytest.mark.integration

EDIT = "Echidnas are spiny anteaters that lay eggs in Tasmania."


async def _chunk(http: httpx.AsyncClient, kid: str) -> dict[str, Any]:
    chunks = (await http.get(f"/api/v1/chunks/{kid}")).json()["data"]
    assert len(chunks) == 1
    return chunks[0]  # type: ignore[no-any-return]


class TestChunkRevisions:
    async def test_edit_keeps_old_content_and_revert_restores_it(self, search_container: Services) -> None:
        async with client_for(search_container) as http:
            kb = await _kb(http, "Fauna")
            k = await _manual(http, kb, "Quokka", TEXT)
            await search_container.jobs.wait_idle(30)
            c = await _chunk(http, k["id"])
            url = f"/api/v1/chunks/{k['id']}/{c['id']}"
            assert (await http.get(f"{url}/revisions")).json()["data"] == []

            r = await http.put(url, json={"content": EDIT, "expected_revision": c["content_revision"]})
            assert r.status_code == 200, r.text
            assert r.json()["data"]["content_revision"] == c["content_revision"] + 1
            revs = (await http.get(f"{url}/revisions")).json()["data"]
            assert [(v["revision"], v["content"]) for v in revs] == [(c["content_revision"], c["content"])]
            assert set(revs[0]) >= {"id", "tenant_id", "knowledge_base_id", "knowledge_id", "chunk_id",
                                    "revision", "content", "is_enabled", "editor_id", "edit_source",
                                    "edited_at", "created_at"}
            assert revs[0]["chunk_id"] == c["id"]
            assert revs[0]["edit_source"] == "manual"
            assert await _hits(http, kb, "echidnas spiny anteaters")
            # a stale editor: its expected revision is the one before the edit
            _err(await http.put(url, json={"content": "lost", "expected_revision": c["content_revision"]}),
                 409)
            _err(await http.post(f"{url}/revert", json={"revision": c["content_revision"],
                                                        "expected_revision": c["content_revision"]}), 409)

            r = await http.post(f"{url}/revert", json={"revision": c["content_revision"],
                                                       "expected_revision": c["content_revision"] + 1})
            assert r.status_code == 200, r.text
            now = r.json()["data"]
            assert now["content"] == c["content"]
            assert now["content_revision"] == c["content_revision"] + 2
            revs = (await http.get(f"{url}/revisions")).json()["data"]
            assert [v["revision"] for v in revs] == [c["content_revision"] + 1, c["content_revision"]]
            assert revs[0]["content"] == EDIT
            assert revs[0]["edit_source"] == "revert"
            hits = await _hits(http, kb, "quokka Rottnest Island")
            assert hits
            assert hits[0]["id"] == c["id"]
            assert all("Echidnas" not in h["content"] for h in await _hits(http, kb, "echidnas anteaters"))

    async def test_bad_input_and_other_tenants(self, search_container: Services) -> None:
        async with client_for(search_container) as http:
            kb = await _kb(http, "Fauna")
            k = await _manual(http, kb, "Quokka", TEXT)
            await search_container.jobs.wait_idle(30)
            c = await _chunk(http, k["id"])
            url = f"/api/v1/chunks/{k['id']}/{c['id']}"
            _err(await http.post(f"{url}/revert", json={}), 400)
            _err(await http.post(f"{url}/revert", json={"revision": None}), 400)
            _err(await http.post(f"{url}/revert", json={"revision": -1}), 400)
            _err(await http.post(f"{url}/revert", json={"revision": "1"}), 400)
            _err(await http.post(f"{url}/revert", json={"revision": True}), 400)
            _err(await http.post(f"{url}/revert", content=b"{nope"), 400)
            _err(await http.post(f"{url}/revert", json={"revision": 99}), 404)
            _err(await http.put(url, json={"content": "x", "expected_revision": "0"}), 400)
            _err(await http.get(f"/api/v1/chunks/{k['id']}/{MISSING}/revisions"), 404)
            _err(await http.get(f"/api/v1/chunks/{MISSING}/{c['id']}/revisions"), 404)
            _err(await http.get(f"/api/v1/chunks/nope/{c['id']}/revisions"), 404)
            assert (await http.put(url, json={"content": EDIT})).status_code == 200
        _, key = await search_container.tenants.create("other")
        async with client_for(search_container, **{"X-API-Key": key}) as other:
            _err(await other.get(f"{url}/revisions"), 404)
            _err(await other.post(f"{url}/revert", json={"revision": 0}), 404)
