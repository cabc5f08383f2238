"""The document list's batch routes and manual-entry edits through the real app
(knora.api.routes.knowledge_batch):
search across knowledge bases, batch delete / re-parse / tags, PUT /knowledge/manual/:id, cancel-parse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from knora.domain.knowledge import ParseStatus
from knora.root import Services
from knora.settings import Settings
from tests.api.envelope import envelope_error as _err
from tests.conftest import client_for, started

pytestmark = pytest.mark.integration

MISSING = "00000000-0000-4000-8000-000000000000"
TEXT = "# Alpha guide\n\n" + "Knora answers questions with citations. " * 20


async def _kb(http: httpx.AsyncClient, name: str = "Docs") -> str:
    r = await http.post("/api/v1/knowledge-bases", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["data"]["id"]  # type: ignore[no-any-return]


async def _manual(http: httpx.AsyncClient, kb: str, title: str, content: str = TEXT,
                  status: str = "publish") -> dict[str, Any]:
    r = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                        json={"title": title, "content": content, "status": status})
    assert r.status_code == 200, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


async def _chunks(http: httpx.AsyncClient, kid: str) -> list[dict[str, Any]]:
    return (await http.get(f"/api/v1/chunks/{kid}", params={"page_size": 100})).json()["data"]  # type: ignore[no-any-return]


async def _get(http: httpx.AsyncClient, kid: str) -> dict[str, Any]:
    return (await http.get(f"/api/v1/knowledge/{kid}")).json()["data"]  # type: ignore[no-any-return]


class TestSearch:
    async def test_search_spans_knowledge_bases_pages_and_filters(self, store_container: Services) -> None:
        async with client_for(store_container) as http:
            kb1, kb2 = await _kb(http, "One"), await _kb(http, "Two")
            for i in range(3):
                await _manual(http, kb1, f"Alpha note {i}")
            await _manual(http, kb2, "Alpha elsewhere")
            await _manual(http, kb2, "Beta only")
            r = await http.get("/api/v1/knowledge/search", params={"keyword": "alpha", "offset": 0,
                                                                  "limit": 3})
            body = r.json()
            assert r.status_code == 200, r.text
            assert body["success"] is True
            assert body["total"] == 4
            assert body["has_more"] is True
            assert len(body["data"]) == 3
            rest = (await http.get("/api/v1/knowledge/search",
                                   params={"keyword": "alpha", "offset": 3, "limit": 3})).json()
            assert rest["has_more"] is False
            assert len(rest["data"]) == 1
            titles = {d["title"] for d in body["data"] + rest["data"]}
            assert titles == {"Alpha note 0", "Alpha note 1", "Alpha note 2", "Alpha elsewhere"}
            assert {d["knowledge_base_id"] for d in body["data"] + rest["data"]} == {kb1, kb2}
            assert (await http.get("/api/v1/knowledge/search",
                                   params={"keyword": "alpha", "file_types": "pdf,csv"})).json()["total"] == 0
            assert (await http.get("/api/v1/knowledge/search",
                                   params={"query": "alpha", "file_types": "md"})).json()["total"] == 4
            faq = (await http.post("/api/v1/knowledge-bases", json={"name": "Alpha FAQ", "type": "faq"}))
            assert faq.status_code == 201, faq.text
            entry = await http.post(f"/api/v1/knowledge-bases/{faq.json()['data']['id']}/faq/entry", json={
                "standard_question": "Alpha?", "answers": ["Yes"]})
            assert entry.status_code == 200, entry.text
            recent = (await http.get("/api/v1/knowledge/search", params={"recent": "true"})).json()
            assert recent["total"] == 5  # the FAQ's store_container row is not a document

    async def test_bad_input_and_other_tenants(self, store_container: Services) -> None:
        async with client_for(store_container) as http:
            await _manual(http, await _kb(http), "Alpha private")
            _err(await http.get("/api/v1/knowledge/search"), 400)
            _err(await http.get("/api/v1/knowledge/search", params={"keyword": "a", "limit": 0}), 400)
            _err(await http.get("/api/v1/knowledge/search", params={"keyword": "a", "offset": -1}), 400)
            _err(await http.get("/api/v1/knowledge/search", params={"keyword": "a", "limit": "x"}), 400)
        _, key = await store_container.tenants.create("other")
        async with client_for(store_container, **{"X-API-Key": key}) as other:
            found = await other.get("/api/v1/knowledge/search", params={"keyword": "alpha"})
            assert found.json()["total"] == 0


class TestBatch:
    async def test_batch_delete_and_reparse(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb = await _kb(http)
            docs = [await _manual(http, kb, f"Note {i}") for i in range(3)]
            await sqlite_container.jobs.wait_idle(30)
            ids = [d["id"] for d in docs[:2]]
            r = await http.post("/api/v1/knowledge/batch-reparse", json={"kb_id": kb, "ids": ids})
            assert r.status_code == 200, r.text
            assert r.json()["data"]["reparse_count"] == 2
            got = (await http.get(f"/api/v1/knowledge/{ids[0]}")).json()["data"]
            assert got["parse_status"] in ("pending", "processing", "completed")
            await sqlite_container.jobs.wait_idle(30)
            assert (await _get(http, ids[0]))["parse_status"] == "completed"
            r = await http.post("/api/v1/knowledge/batch-delete", json={"kb_id": kb, "ids": ids})
            assert r.status_code == 200, r.text
            data = r.json()["data"]
            assert data["deleted_count"] == 2
            assert data["task_id"]
            for kid in ids:
                _err(await http.get(f"/api/v1/knowledge/{kid}"), 404)
            assert (await http.get(f"/api/v1/knowledge/{docs[2]['id']}")).status_code == 200

    async def test_batch_refuses_bad_input_and_foreign_ids_whole(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb, kb2 = await _kb(http), await _kb(http, "Two")
            mine = await _manual(http, kb, "Mine")
            there = await _manual(http, kb2, "There")
            for path in ("/api/v1/knowledge/batch-delete", "/api/v1/knowledge/batch-reparse"):
                _err(await http.post(path, json={"ids": [mine["id"]]}), 400)
                _err(await http.post(path, json={"kb_id": kb, "ids": []}), 400)
                _err(await http.post(path, json={"kb_id": kb, "ids": "x"}), 400)
                _err(await http.post(path, content=b"{"), 400)
                _err(await http.post(path, json={"kb_id": MISSING, "ids": [mine["id"]]}), 404)
                # one id of another knowledge base: nothing is done
                _err(await http.post(path, json={"kb_id": kb, "ids": [mine["id"], there["id"]]}), 404)
            assert (await http.get(f"/api/v1/knowledge/{mine['id']}")).status_code == 200
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _err(await other.post("/api/v1/knowledge/batch-delete", json={"kb_id": kb, "ids": [mine["id"]]}),
                 404)
            own = await _kb(other)
            _err(await other.post("/api/v1/knowledge/batch-delete", json={"kb_id": own, "ids": [mine["id"]]}),
                 404)
        async with client_for(sqlite_container) as http:
            assert (await http.get(f"/api/v1/knowledge/{mine['id']}")).status_code == 200


class TestTags:
    async def test_set_and_clear_tags(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb, kb2 = await _kb(http), await _kb(http, "Two")
            a, b = await _manual(http, kb, "A"), await _manual(http, kb, "B")
            tag = (await http.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "red"})).json()["data"]
            r = await http.put("/api/v1/knowledge/tags", json={"updates": {a["id"]: [tag["id"]],
                                                                        b["id"]: [tag["id"]]}})
            assert r.status_code == 200, r.text
            assert r.json()["data"]["updated_count"] == 2
            assert (await http.get(f"/api/v1/knowledge/{a['id']}")).json()["data"]["tag_id"] == tag["id"]
            assert (await http.put("/api/v1/knowledge/tags",
                                   json={"kb_id": kb, "updates": {a["id"]: []}})).status_code == 200
            assert (await http.get(f"/api/v1/knowledge/{a['id']}")).json()["data"]["tag_id"] == ""
            other_tag = (await http.post(f"/api/v1/knowledge-bases/{kb2}/tags",
                                         json={"name": "blue"})).json()["data"]
            foreign = {"updates": {a["id"]: [other_tag["id"]]}}
            _err(await http.put("/api/v1/knowledge/tags", json=foreign), 400)
            _err(await http.put("/api/v1/knowledge/tags", json={"updates": {}}), 400)
            _err(await http.put("/api/v1/knowledge/tags", json={"updates": {a["id"]: "x"}}), 400)
            _err(await http.put("/api/v1/knowledge/tags", json={"updates": {MISSING: []}}), 404)
            _err(await http.put("/api/v1/knowledge/tags",
                                json={"updates": {a["id"]: [tag["id"], other_tag["id"]]}}), 400)
            assert (await http.get(f"/api/v1/knowledge/{b['id']}")).json()["data"]["tag_id"] == tag["id"]
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _err(await other.put("/api/v1/knowledge/tags", json={"updates": {b["id"]: []}}), 404)


class TestManualEdit:
    async def test_edit_reindexes_the_new_content(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb = await _kb(http)
            k = await _manual(http, kb, "Old title", "# Old\n\nThe zebra lives here. " * 5)
            await sqlite_container.jobs.wait_idle(30)
            r = await http.put(f"/api/v1/knowledge/manual/{k['id']}",
                               json={"title": "New title", "content": "# New\n\nThe giraffe lives here. " * 5,
                                     "status": "publish"})
            assert r.status_code == 200, r.text
            assert r.json()["data"]["title"] == "New title"
            await sqlite_container.jobs.wait_idle(30)
            got = (await http.get(f"/api/v1/knowledge/{k['id']}")).json()["data"]
            assert got["parse_status"] == "completed"
            assert got["title"] == "New title"
            text = " ".join(c["content"] for c in await _chunks(http, k["id"]))
            assert "giraffe" in text
            assert "zebra" not in text
            # a draft leaves the index
            r = await http.put(f"/api/v1/knowledge/manual/{k['id']}",
                               json={"title": "New title", "content": "draft text", "status": "draft"})
            assert r.status_code == 200, r.text
            assert await _chunks(http, k["id"]) == []

    async def test_bad_input_and_other_tenants(self, sqlite_container: Services) -> None:
        async with client_for(sqlite_container) as http:
            kb = await _kb(http)
            k = await _manual(http, kb, "Entry")
            up = await http.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file",
                                 files={"file": ("a.txt", b"An uploaded file, not a manual entry. " * 5)})
            assert up.status_code == 200, up.text
            _err(await http.put(f"/api/v1/knowledge/manual/{k['id']}", json={"title": "x"}), 400)
            _err(await http.put(f"/api/v1/knowledge/manual/{k['id']}", json={"content": "  "}), 400)
            _err(await http.put(f"/api/v1/knowledge/manual/{k['id']}",
                                json={"content": "a", "status": "x"}), 400)
            _err(await http.put(f"/api/v1/knowledge/manual/{up.json()['data']['id']}", json={"content": "a"}),
                 400)
            _err(await http.put(f"/api/v1/knowledge/manual/{MISSING}", json={"content": "a"}), 404)
            _err(await http.put("/api/v1/knowledge/manual/not-an-id", json={"content": "a"}), 404)
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _err(await other.put(f"/api/v1/knowledge/manual/{k['id']}", json={"content": "mine now"}), 404)


    async def test_the_storage_quota_counts_the_new_content(self,
                                                            make_settings: Callable[..., Settings]) -> None:
        async with started(make_settings(tenant_storage_quota_bytes=2000)) as c, client_for(c) as http:
            kb = await _kb(http)
            k = await _manual(http, kb, "Small", "# Small\n\n" + "word " * 100)
            _err(await http.put(f"/api/v1/knowledge/manual/{k['id']}", json={"content": "word " * 1000}), 403)
            ok = await http.put(f"/api/v1/knowledge/manual/{k['id']}", json={"content": "word " * 300})
            assert ok.status_code == 200, ok.text


class TestCancelParse:
    async def test_cancel_a_pending_parse_and_reparse_it(self, sqlite_container: Services) -> None:
        await sqlite_container.jobs.stop()  # the queue holds the job: the parse stays pending
        async with client_for(sqlite_container) as http:
            kb = await _kb(http)
            k = await _manual(http, kb, "Pending")
            r = await http.post(f"/api/v1/knowledge/{k['id']}/cancel-parse")
            assert r.status_code == 200, r.text
            assert r.json()["data"]["parse_status"] == "cancelled"
            _err(await http.post(f"/api/v1/knowledge/{k['id']}/cancel-parse"), 400)  # nothing to cancel
            await sqlite_container.jobs.start()
            await sqlite_container.jobs.wait_idle(30)
            # its queued job ran and did nothing
            got = (await http.get(f"/api/v1/knowledge/{k['id']}")).json()["data"]
            assert got["parse_status"] == "cancelled"
            assert await _chunks(http, k["id"]) == []
            assert (await http.post(f"/api/v1/knowledge/{k['id']}/reparse")).status_code == 200
            await sqlite_container.jobs.wait_idle(30)
            assert (await _get(http, k["id"]))["parse_status"] == "completed"
            _err(await http.post(f"/api/v1/knowledge/{k['id']}/cancel-parse"), 400)
            _err(await http.post(f"/api/v1/knowledge/{MISSING}/cancel-parse"), 404)
        _, key = await sqlite_container.tenants.create("other")
        async with client_for(sqlite_container, **{"X-API-Key": key}) as other:
            _err(await other.post(f"/api/v1/knowledge/{k['id']}/cancel-parse"), 404)
        assert ParseStatus.CANCELLED == "cancelled"
