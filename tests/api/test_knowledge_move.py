"""Moving documents between knowledge bases through the real app (knora.api.routes.knowledge_move over
knora.services.kb.move), on SQLite and PostgreSQL metadata: after the job the target's searches (the real
search route) find the moved text and the source's no longer do, in both modes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from knora.root import Services
from tests.api.test_kb_copy import MISSING, TEXT, _documents, _err, _hits, _kb, _manual
from tests.conftest import client_for

pytestmark = pytest.mark.integration

QUERY = "quokka Rottnest Island"


async def _move(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await http.post("/api/v1/knowledge/move", json=body)
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


class TestMove:
    @pytest.mark.parametrize("mode", ["reuse_vectors", "reparse"])
    async def test_move_between_knowledge_bases(self, search_container: Services, mode: str) -> None:
        async with client_for(search_container) as http:
            src, dst = await _kb(http, "From"), await _kb(http, "To")
            k = await _manual(http, src, "Quokka", TEXT)
            stay = await _manual(http, src, "Wombat", "Wombats dig burrows and leave cube-shaped droppings.")
            await search_container.jobs.wait_idle(30)
            assert await _hits(http, src, QUERY)
            assert not await _hits(http, dst, QUERY)

            chunk = (await http.get(f"/api/v1/chunks/{k['id']}")).json()["data"][0]
            edited = await http.put(f"/api/v1/chunks/{k['id']}/{chunk['id']}",
                                    json={"content": TEXT + " Edited."})
            assert edited.status_code == 200, edited.text
            targets = (await http.get(f"/api/v1/knowledge-bases/{src}/move-targets")).json()["data"]
            assert [t["id"] for t in targets] == [dst]

            started = await _move(http, {"knowledge_ids": [k["id"]], "source_kb_id": src,
                                         "target_kb_id": dst, "mode": mode})
            assert set(started) == {"task_id", "source_kb_id", "target_kb_id", "knowledge_count", "message"}
            assert started["knowledge_count"] == 1
            await search_container.jobs.wait_idle(30)
            p = (await http.get(f"/api/v1/knowledge/move/progress/{started['task_id']}")).json()["data"]
            assert p["status"] == "completed", p
            assert (p["progress"], p["total"], p["processed"], p["failed"]) == (100, 1, 1, 0)
            assert p["source_kb_id"] == src
            assert p["target_kb_id"] == dst

            moved = (await http.get(f"/api/v1/knowledge/{k['id']}")).json()["data"]
            assert moved["knowledge_base_id"] == dst
            assert moved["parse_status"] == "completed"
            assert [d["id"] for d in await _documents(http, dst)] == [k["id"]]
            assert [d["id"] for d in await _documents(http, src)] == [stay["id"]]
            hits = await _hits(http, dst, QUERY)
            assert hits
            assert {h["knowledge_id"] for h in hits} == {k["id"]}
            assert all(h["knowledge_id"] != k["id"] for h in await _hits(http, src, QUERY))
            if mode == "reuse_vectors":  # the same chunks, with their edit history
                revs = (await http.get(f"/api/v1/chunks/{k['id']}/{chunk['id']}/revisions")).json()["data"]
                assert [(r["content"], r["knowledge_base_id"]) for r in revs] == [(chunk["content"], dst)]
            # deleting the source knowledge base leaves the moved document whole
            assert (await http.delete(f"/api/v1/knowledge-bases/{src}")).status_code == 200
            assert await _hits(http, dst, QUERY)
            assert (await http.get(f"/api/v1/knowledge/{k['id']}/preview")).status_code == 200

    async def test_bad_input_and_other_tenants(self, search_container: Services) -> None:
        async with client_for(search_container) as http:
            src, dst = await _kb(http, "From"), await _kb(http, "To")
            k = await _manual(http, src, "Quokka", TEXT)
            await search_container.jobs.wait_idle(30)
            ok = {"knowledge_ids": [k["id"]], "source_kb_id": src, "target_kb_id": dst, "mode": "reparse"}
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "knowledge_ids": []}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "knowledge_ids": None}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "knowledge_ids": "x"}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "mode": "teleport"}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "mode": None}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "target_kb_id": src}), 400)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "target_kb_id": MISSING}), 404)
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "knowledge_ids": [MISSING]}), 404)
            r = await http.post("/api/v1/knowledge-bases", json={"name": "FAQ", "type": "faq"})
            faq = r.json()["data"]["id"]
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "target_kb_id": faq}), 400)
            faq_targets = await http.get(f"/api/v1/knowledge-bases/{faq}/move-targets")
            assert faq_targets.json()["data"] == []
            third = await _kb(http, "Third")
            _err(await http.post("/api/v1/knowledge/move", json={**ok, "source_kb_id": third}), 404)
            _err(await http.post("/api/v1/knowledge/move", content=b"{nope"), 400)
            _err(await http.get("/api/v1/knowledge/move/progress/unknown"), 404)
            _err(await http.get(f"/api/v1/knowledge-bases/{MISSING}/move-targets"), 404)
            task = await _move(http, ok)
        _, key = await search_container.tenants.create("other")
        async with client_for(search_container, **{"X-API-Key": key}) as other:
            theirs = await _kb(other, "Theirs")
            _err(await other.post("/api/v1/knowledge/move", json=ok), 404)
            _err(await other.post("/api/v1/knowledge/move", json={**ok, "target_kb_id": theirs}), 404)
            _err(await other.get(f"/api/v1/knowledge-bases/{src}/move-targets"), 404)
            _err(await other.get(f"/api/v1/knowledge/move/progress/{task['task_id']}"), 404)
            assert (await other.get(f"/api/v1/knowledge-bases/{theirs}/move-targets")).json()["data"] == []
